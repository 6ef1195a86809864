import { expect } from 'chai';
import { fsmStateLabel, FSM_STATE_NAMES } from '../sdk/cluster-state.js';
import { FuxiClient } from '../sdk/fuxi-client.js';
import { runCli, type CliDeps } from '../cli/program.js';
import { fmtDuration, formatClusterStatus, formatFaultEvents, formatPartitions, formatRecovery } from '../cli/format.js';
import { FakeMaster } from './fake-cluster.js';
import { Capture, mockClusterStatus, mockFault } from './helpers.js';

/** 2026-01-01T00:00:00Z */
const T = 1767225600000;

describe('cluster status formatting', () => {
  it('names every FSM state', () => {
    expect(Object.keys(FSM_STATE_NAMES)).to.deep.equal(['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S2S3']);
    expect(fsmStateLabel('S0')).to.equal('S0 normal');
    expect(fsmStateLabel('S1')).to.equal('S1 master failure');
    expect(fsmStateLabel('S2')).to.equal('S2 AM failure');
    expect(fsmStateLabel('S3')).to.equal('S3 agent failure');
    expect(fsmStateLabel('S4')).to.equal('S4 master + AM failure');
    expect(fsmStateLabel('S5')).to.equal('S5 master + agent failure');
    expect(fsmStateLabel('S6')).to.equal('S6 master + AM + agent failure');
    expect(fsmStateLabel('S2S3')).to.equal('S2S3 AM + agent failure');
    expect(fsmStateLabel('S9')).to.equal('S9');
    expect(fsmStateLabel('')).to.equal('-');
  });

  it('formats durations', () => {
    expect(fmtDuration(0)).to.equal('0ms');
    expect(fmtDuration(350)).to.equal('350ms');
    expect(fmtDuration(3249)).to.equal('3.2s');
    expect(fmtDuration(59_999)).to.equal('59.9s');
    expect(fmtDuration(303_000)).to.equal('5m3s');
    expect(fmtDuration(2 * 3_600_000 + 5 * 60_000 + 59_000)).to.equal('2h5m');
    expect(fmtDuration(3 * 86_400_000 + 4 * 3_600_000)).to.equal('3d4h');
    expect(fmtDuration(-5)).to.equal('0ms');
    expect(fmtDuration(Number.NaN)).to.equal('0ms');
  });

  it('formats recovery progress in each phase', () => {
    const base = { agentsReported: 3, agentsExpected: 4, appsReported: 1, appsExpected: 2, startedAtMs: String(T), finishedAtMs: '0' };
    expect(formatRecovery({ ...base, phase: 'aggregating' }, T + 12_000)).to.equal(
      'aggregating for 12.0s: agents 3/4 reported, apps 1/2 reported (started 2026-01-01T00:00:00Z)',
    );
    expect(formatRecovery({ ...base, phase: 'recovered', agentsReported: 4, appsReported: 2, finishedAtMs: String(T + 3200) }, T + 63_200)).to.equal(
      'recovered in 3.2s: agents 4/4 reported, apps 2/2 reported (finished 2026-01-01T00:00:03Z, 1m0s ago)',
    );
    expect(formatRecovery({ ...base, phase: 'normal', startedAtMs: '0' }, T)).to.equal('normal (no failover since this master took over)');
    expect(formatRecovery({ ...base, phase: 'normal' }, T)).to.equal('normal (last failover started 2026-01-01T00:00:00Z)');
    expect(formatRecovery({ ...base, phase: 'aggregating', startedAtMs: '0' }, T)).to.equal('aggregating: agents 3/4 reported, apps 1/2 reported');
    expect(formatRecovery({ ...base, phase: 'loading' }, T)).to.equal('loading: agents 3/4 reported, apps 1/2 reported');
    expect(formatRecovery(null, T)).to.equal('-');
  });

  it('formats open fault events with their age', () => {
    const events = [
      mockFault({ id: 'fault-1', kind: 'FM_CRASH', subject: '', sinceMs: String(T), state: 'recovering', detail: 'took over at epoch 8' }),
      mockFault({ id: 'fault-2', kind: 'AGENT_TIMING', subject: 'n3', sinceMs: String(T + 7_000), state: 'open', detail: '' }),
    ];
    expect(formatFaultEvents(events, T + 12_000)).to.equal(
      [
        'ID       KIND          SUBJECT  STATE       AGE    DETAIL',
        'fault-1  FM_CRASH      -        recovering  12.0s  took over at epoch 8',
        'fault-2  AGENT_TIMING  n3       open        5.0s',
      ].join('\n'),
    );
    expect(formatFaultEvents([mockFault({ sinceMs: '0' })], T)).to.match(/\s-$/);
    expect(formatFaultEvents([], T)).to.equal('(no open fault events)');
  });

  it('formats a whole status: S5 during a failover', () => {
    const st = mockClusterStatus({
      epoch: '8',
      fsmState: 'S5',
      openEvents: [
        mockFault({ id: 'fault-1', kind: 'FM_CRASH', sinceMs: String(T), state: 'recovering', detail: 'took over at epoch 8' }),
        mockFault({ id: 'fault-2', kind: 'AGENT_CRASH', subject: 'n2', sinceMs: String(T + 2_000), detail: 'did not report' }),
      ],
      recovery: { phase: 'aggregating', agentsReported: 2, agentsExpected: 3, appsReported: 2, appsExpected: 2, startedAtMs: String(T), finishedAtMs: '0' },
      nodesHealthy: 2,
      nodesTimingOut: 1,
      nodesLost: 0,
      appsRunning: 2,
      dashboardUrl: 'http://127.0.0.1:9100/',
    });
    expect(formatClusterStatus(st, T + 4_500)).to.equal(
      [
        'leader:    127.0.0.1:7070',
        'dashboard: http://127.0.0.1:9100/',
        'epoch:     8',
        'state:     S5 master + agent failure',
        'recovery:  aggregating for 4.5s: agents 2/3 reported, apps 2/2 reported (started 2026-01-01T00:00:00Z)',
        'nodes:     2 healthy, 1 timing out, 0 lost',
        'apps:      2 running',
        '',
        'open fault events:',
        'ID       KIND         SUBJECT  STATE       AGE   DETAIL',
        'fault-1  FM_CRASH     -        recovering  4.5s  took over at epoch 8',
        'fault-2  AGENT_CRASH  n2       open        2.5s  did not report',
      ].join('\n'),
    );
  });

  it('formats a whole status: the store out of space, as a condition before the fault events', () => {
    const st = mockClusterStatus({
      conditions: [{ type: 'StoreOutOfSpace', sinceMs: String(T), message: 'etcd batch: etcd is out of space (...). Free space: etcdctl compact' }],
    });
    expect(formatClusterStatus(st, T + 65_000)).to.equal(
      [
        'leader:    127.0.0.1:7070',
        'epoch:     7',
        'state:     S0 normal',
        'recovery:  normal (no failover since this master took over)',
        'nodes:     3 healthy, 0 timing out, 0 lost',
        'apps:      2 running',
        '',
        'conditions:',
        '  StoreOutOfSpace for 1m5s: etcd batch: etcd is out of space (...). Free space: etcdctl compact',
        '',
        'open fault events:',
        '(no open fault events)',
      ].join('\n'),
    );
  });

  it('formats partitions: broken links (a <-/-> b, for how long) and nodes partitioned from the master', () => {
    const connectivity = {
      version: '7000000003',
      brokenLinks: [
        { a: 'a1', b: 'a2', sinceMs: String(T) },
        { a: 'a1', b: 'node-10', sinceMs: String(T + 60_000) },
      ],
      partitionedFromMaster: ['a3'],
      draining: [],
    };
    expect(formatPartitions(connectivity, T + 65_000)).to.equal(
      [
        '  a1 <-/-> a2       for 1m5s (since 2026-01-01T00:00:00Z)',
        '  a1 <-/-> node-10  for 5.0s (since 2026-01-01T00:01:00Z)',
        '  partitioned from the master (their peers still reach them): a3',
      ].join('\n'),
    );
    expect(formatPartitions({ version: '9', brokenLinks: [], partitionedFromMaster: [], draining: [] }, T)).to.equal('');
    expect(formatPartitions(null, T)).to.equal('');
    expect(formatClusterStatus(mockClusterStatus({ connectivity }), T + 65_000)).to.equal(
      [
        'leader:    127.0.0.1:7070',
        'epoch:     7',
        'state:     S0 normal',
        'recovery:  normal (no failover since this master took over)',
        'nodes:     3 healthy, 0 timing out, 0 lost',
        'apps:      2 running',
        '',
        'partitions:',
        '  a1 <-/-> a2       for 1m5s (since 2026-01-01T00:00:00Z)',
        '  a1 <-/-> node-10  for 5.0s (since 2026-01-01T00:01:00Z)',
        '  partitioned from the master (their peers still reach them): a3',
        '',
        'open fault events:',
        '(no open fault events)',
      ].join('\n'),
    );
  });

  it('formats a whole status: S0, nothing open', () => {
    const text = formatClusterStatus(mockClusterStatus({ leader: '', epoch: '0', recovery: null }), T);
    expect(text).to.equal(
      [
        'leader:    -',
        'epoch:     0',
        'state:     S0 normal',
        'recovery:  -',
        'nodes:     3 healthy, 0 timing out, 0 lost',
        'apps:      2 running',
        '',
        'open fault events:',
        '(no open fault events)',
      ].join('\n'),
    );
  });
});

describe('fuxi cluster status (against a fake master)', function () {
  this.timeout(20_000);
  let master: FakeMaster;

  async function fuxi(args: string[], over: Partial<CliDeps> = {}): Promise<{ code: number; out: string; err: string }> {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runCli(['--master', master.address, ...args], {
      makeClient: (m) => new FuxiClient({ masters: m, insecure: true, retryForMs: 2000 }),
      stdout,
      stderr,
      env: {},
      readFile: () => {
        throw new Error('no files');
      },
      now: () => T + 10_000,
      ...over,
    });
    return { code, out: stdout.text, err: stderr.text };
  }

  beforeEach(async () => {
    master = await new FakeMaster().start();
    master.clusterStatus = {
      leader: '10.0.0.1:7070',
      epoch: '12',
      fsmState: 'S6',
      openEvents: [
        { id: 'fault-4', kind: 'FM_CRASH', subject: '', sinceMs: T, state: 'recovering', detail: 'new leader' },
        { id: 'fault-5', kind: 'AM_TIMING', subject: 'wc-1', sinceMs: String(T + 1000), state: 'open', detail: '' },
        { id: 'fault-6', kind: 'AGENT_TIMING', subject: 'n7', sinceMs: T + 4000, state: 'open', detail: 'no report' },
      ],
      recovery: { phase: 'aggregating', agentsReported: 9, agentsExpected: 10, appsReported: 3, appsExpected: 4, startedAtMs: T, finishedAtMs: 0 },
      nodesHealthy: 9,
      nodesTimingOut: 1,
      nodesLost: 0,
      appsRunning: 4,
    };
  });
  afterEach(async () => {
    await master.stop();
  });

  it('prints the leader, epoch, FSM state, recovery and open fault events', async () => {
    const r = await fuxi(['cluster', 'status']);
    expect(r.code).to.equal(0);
    expect(r.err).to.equal('');
    expect(r.out).to.equal(
      [
        'leader:    10.0.0.1:7070',
        'epoch:     12',
        'state:     S6 master + AM + agent failure',
        'recovery:  aggregating for 10.0s: agents 9/10 reported, apps 3/4 reported (started 2026-01-01T00:00:00Z)',
        'nodes:     9 healthy, 1 timing out, 0 lost',
        'apps:      4 running',
        '',
        'open fault events:',
        'ID       KIND          SUBJECT  STATE       AGE    DETAIL',
        'fault-4  FM_CRASH      -        recovering  10.0s  new leader',
        'fault-5  AM_TIMING     wc-1     open        9.0s',
        'fault-6  AGENT_TIMING  n7       open        6.0s   no report',
        '',
      ].join('\n'),
    );
    expect(master.calls).to.deep.equal(['GetClusterStatus']);
  });

  it('-o json, before or after the command: the wire object, int64 as strings', async () => {
    for (const args of [
      ['-o', 'json', 'cluster', 'status'],
      ['cluster', 'status', '-o', 'json'],
    ]) {
      const r = await fuxi(args);
      expect(r.code, args.join(' ')).to.equal(0);
      const j = JSON.parse(r.out);
      expect(j.fsmState).to.equal('S6');
      expect(j.epoch).to.equal('12');
      expect(j.openEvents.map((e: { id: string }) => e.id)).to.deep.equal(['fault-4', 'fault-5', 'fault-6']);
      expect(j.openEvents[0]).to.deep.equal({ id: 'fault-4', kind: 'FM_CRASH', subject: '', sinceMs: String(T), state: 'recovering', detail: 'new leader' });
      expect(j.recovery).to.deep.equal({
        phase: 'aggregating',
        agentsReported: 9,
        agentsExpected: 10,
        appsReported: 3,
        appsExpected: 4,
        startedAtMs: String(T),
        finishedAtMs: '0',
      });
      expect(j).to.include({ leader: '10.0.0.1:7070', nodesHealthy: 9, nodesTimingOut: 1, nodesLost: 0, appsRunning: 4 });
    }
  });

  it('prints a healthy cluster', async () => {
    master.clusterStatus = { epoch: '3', fsmState: 'S0', recovery: { phase: 'normal' }, nodesHealthy: 2 };
    const r = await fuxi(['cluster', 'status']);
    expect(r.code).to.equal(0);
    expect(r.out).to.include(`leader:    ${master.address}\n`);
    expect(r.out).to.include('state:     S0 normal\n');
    expect(r.out).to.include('recovery:  normal (no failover since this master took over)\n');
    expect(r.out).to.include('nodes:     2 healthy, 0 timing out, 0 lost\n');
    expect(r.out).to.match(/open fault events:\n\(no open fault events\)\n$/);
  });

  it('the SDK returns the status', async () => {
    const c = new FuxiClient({ masters: [master.address], insecure: true, retryForMs: 2000 });
    try {
      const st = await c.clusterStatus();
      expect(st.fsmState).to.equal('S6');
      expect(st.openEvents[2]).to.deep.equal({
        id: 'fault-6',
        kind: 'AGENT_TIMING',
        subject: 'n7',
        sinceMs: String(T + 4000),
        state: 'open',
        detail: 'no report',
      });
    } finally {
      c.close();
    }
  });

  it('usage: "fuxi cluster" alone or an unknown subcommand exits 2; help lists "status"', async () => {
    const bare = await fuxi(['cluster']);
    expect(bare.code).to.equal(2);
    expect(bare.err).to.include('status');
    expect((await fuxi(['cluster', 'bogus'])).code).to.equal(2);
    const help = await fuxi(['cluster', '--help']);
    expect(help.code).to.equal(0);
    expect(help.out).to.match(/status\s+show the leader, epoch, fault FSM state/);
    expect(master.calls).to.deep.equal([]);
  });

  it('exits 4 when no master answers', async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await runCli(['--master', '127.0.0.1:1', 'cluster', 'status'], {
      makeClient: (m) => new FuxiClient({ masters: m, insecure: true, retryForMs: 200 }),
      stdout,
      stderr,
      env: {},
      readFile: () => '',
    });
    expect(code).to.equal(4);
    expect(stderr.text).to.match(/^error: master unavailable \(127\.0\.0\.1:1\): /);
  });
});
