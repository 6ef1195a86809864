/**
 * etcd out of space, against real MasterServers (a leader and a standby) on a real etcd with a
 * 2 MiB `--quota-backend-bytes`, filled by another client until etcd raises its NOSPACE alarm:
 *
 * - the call whose write met the full store gets UNAVAILABLE (etcd applies the write that crosses
 *   its quota and then answers NOSPACE, so its outcome is unknown), and its retry RESOURCE_EXHAUSTED
 *   once the leader's fresh load of the store shows the write absent; its effect is never shown;
 * - the leader holds still instead of abdicating (same term, the standby stays a standby): reads
 *   are served, every change is refused before it is made, `GetClusterStatus` lists the condition,
 *   and the error is logged once;
 * - a standby elected while etcd is full holds still from the start (no abdication cascade);
 * - once space is freed (delete, compact, defrag, alarm disarm) leadership is rebuilt under a new
 *   epoch and writes work again, without a restart.
 */
import { expect } from 'chai';
import { normalizeJobSpec, type Logger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, MasterConnection, RpcError, type TypedClient } from '@fuxi/rpc';
import { EtcdStore } from '@fuxi/store';
import { startEtcd, type EtcdProcess } from '@fuxi/store/etcd-fixture';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { rpcError } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A logger that keeps every message (all levels, children included). */
function recordingLogger(lines: Array<{ level: string; msg: string }>): Logger {
  const at = (level: string) => (_o: object, msg?: string) => void lines.push({ level, msg: msg ?? '' });
  const l: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => l };
  return l;
}

const spec = (id: string) =>
  jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 'map', instances: 1, resources: { cpu: 1, memory: 256 }, command: ['true'] }] }));

/** Retries `fn` while it fails with UNAVAILABLE (a leader loading or rebuilding). */
async function answered<T>(fn: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof RpcError) || e.code !== 'UNAVAILABLE' || Date.now() > end) throw e;
      await sleep(100);
    }
  }
}

describe('master: etcd out of space (real etcd, --quota-backend-bytes 2 MiB)', function () {
  this.timeout(90_000);
  let etcd: EtcdProcess;
  let seq = 0;
  let prefix = '';
  const masters: MasterServer[] = [];
  const clients: Array<{ close(): void }> = [];
  let filler: EtcdStore;

  before(async () => {
    etcd = await startEtcd({ extraArgs: ['--quota-backend-bytes', String(2 * 1024 * 1024)] });
  });
  after(async () => {
    await etcd?.stop();
  });
  beforeEach(async () => {
    prefix = `/space-${process.pid}-${++seq}/`;
    filler = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: `/fill-${process.pid}-${seq}/` });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const m of masters.splice(0)) await m.stop();
    // Leave etcd with room for the next test.
    await freeSpace().catch((e: unknown) => process.stderr.write(`      (could not free etcd space: ${String(e)})\n`));
    await filler.close();
  });

  async function startMaster(lines: Array<{ level: string; msg: string }> = []): Promise<MasterServer> {
    const cfg = {
      ...defaultConfig(['true']),
      listen: '127.0.0.1:0',
      store: 'etcd' as const,
      etcdEndpoints: [etcd.endpoint],
      etcdPrefix: prefix,
      leaseTtlSec: 5,
    };
    const m = new MasterServer(cfg, recordingLogger(lines));
    masters.push(m);
    await m.start();
    return m;
  }

  function client(m: MasterServer): TypedClient<MasterServiceDefinition> {
    const c = connect(loadFuxiProto().MasterService, m.address);
    clients.push(c);
    return c;
  }

  /** Puts 100 KiB values until etcd refuses one for space. */
  async function fill(): Promise<void> {
    const blob = 'x'.repeat(100 * 1024);
    for (let i = 0; i < 1000; i++) {
      try {
        await filler.put(`blob/${i}`, blob);
      } catch (e) {
        expect((e as { code?: string }).code).to.equal('RESOURCE_EXHAUSTED');
        expect(await filler.outOfSpace()).to.equal(true);
        return;
      }
    }
    throw new Error('etcd never ran out of space');
  }

  /** What an operator does: delete, compact, defragment, disarm. */
  async function freeSpace(): Promise<void> {
    for (const kv of await filler.list('blob/')) await filler.delete(kv.key);
    await filler.compact();
    await filler.defragment();
    await filler.disarmNoSpace();
  }

  it('answers the write that met the full store UNAVAILABLE (its outcome unknown) and its retry RESOURCE_EXHAUSTED, and never shows it; the leader holds still (reads served, changes refused, the condition in cluster status, logged once); writes work again once space is freed', async () => {
    const lines: Array<{ level: string; msg: string }> = [];
    const m1 = await startMaster(lines);
    await until('m1 leads', () => m1.role === 'leader' && m1.epoch !== '');
    const m2 = await startMaster();
    const c1 = client(m1);
    expect((await answered(() => c1.SubmitJob({ spec: spec('kept') }))).created).to.equal(true);
    const epoch = m1.epoch;

    await fill();
    // The alarm shows in cluster status before the leader's next write is refused.
    const early = await c1.GetClusterStatus({});
    expect(early.conditions.map((c) => c.type)).to.deep.equal(['StoreOutOfSpace']);

    const refused = await rpcError(c1.SubmitJob({ spec: spec('lost') }));
    expect(refused.code).to.equal('UNAVAILABLE');
    expect(refused.message).to.match(/etcd is out of space .*etcdctl alarm disarm.*may or may not have been written: retry/);
    // The retry is answered from the fresh load of the store: the job is not there, so a definite refusal.
    const retried = await until('the retry answered from the store', async () => {
      const e = await rpcError(c1.SubmitJob({ spec: spec('lost') }));
      return e.code !== 'UNAVAILABLE' && e;
    });
    expect(retried.code).to.equal('RESOURCE_EXHAUSTED');

    // Its effect is not visible: reads come from a fresh load of the store.
    expect((await answered(() => c1.ListJobs({ states: [] }))).jobs.map((j) => j.jobId)).to.deep.equal(['kept']);
    expect((await rpcError(c1.GetJob({ jobId: 'lost' }))).code).to.equal('NOT_FOUND');
    // Every change is refused before it is made: clients RESOURCE_EXHAUSTED, agents UNAVAILABLE.
    expect((await rpcError(c1.SubmitJob({ spec: spec('lost') }))).code).to.equal('RESOURCE_EXHAUSTED');
    expect((await rpcError(c1.KillJob({ jobId: 'kept', reason: 'test' }))).code).to.equal('RESOURCE_EXHAUSTED');
    const hb = await rpcError(
      c1.RegisterAgent({ node: { nodeId: 'n1', address: '127.0.0.1:1', rack: '', capacity: { cpuMilli: 1000, memoryMb: 1024 } }, epochSeen: '0' }),
    );
    expect(hb.code).to.equal('UNAVAILABLE');
    expect(hb.message).to.match(/out of space/);
    const st = await c1.GetClusterStatus({});
    expect(st.leader).to.equal(m1.address);
    expect(st.conditions).to.have.length(1);
    expect(st.conditions[0]!.type).to.equal('StoreOutOfSpace');
    expect(Number(st.conditions[0]!.sinceMs)).to.be.greaterThan(0);
    expect(st.conditions[0]!.message).to.match(/etcdctl compact/);

    // Holding still, not abdicating: over three checks of etcd's space (its lease renewed all
    // along: keep-alives are not writes), the same leader keeps the same term and the standby
    // stays a standby.
    await sleep(3000);
    expect(m1.role).to.equal('leader');
    expect(m1.epoch).to.equal(epoch);
    expect(m2.role).to.equal('standby');
    expect(lines.filter((l) => l.level === 'error' && l.msg.startsWith('ETCD IS OUT OF SPACE'))).to.have.length(1);
    expect(lines.filter((l) => l.msg === 'stepped down')).to.deep.equal([]);

    await freeSpace();
    // The leader asks etcd every second; once the alarm is gone it gives up the term, and
    // leadership is rebuilt from the store under a new epoch (either master may win). The
    // client's retry creates the job exactly once.
    await until('the leader sees the room', () => lines.some((l) => l.msg.startsWith('etcd has space again')));
    const conn = new MasterConnection([m1.address, m2.address], { retryForMs: 30_000 });
    clients.push(conn);
    expect((await conn.call('SubmitJob', { spec: spec('lost') }, { retry: true })).created).to.equal(true);
    expect((await conn.call('SubmitJob', { spec: spec('lost') }, { retry: true })).created).to.equal(false);
    expect((await conn.call('ListJobs', { states: [] }, { retry: true })).jobs.map((j) => j.jobId)).to.deep.equal(['kept', 'lost']);
    const leader = masters.find((m) => m.role === 'leader')!;
    expect(BigInt(leader.epoch) > BigInt(epoch)).to.equal(true);
    expect((await conn.call('GetClusterStatus', {}, { retry: true })).conditions).to.deep.equal([]);
  });

  it('answers, while holding still, the changes the store already holds: a retried submit finds its job, a kill of an ended job finds it ended; only changes that need a write are refused', async () => {
    const m1 = await startMaster();
    await until('m1 leads', () => m1.role === 'leader' && m1.epoch !== '');
    const c1 = client(m1);
    expect((await answered(() => c1.SubmitJob({ spec: spec('kept') }))).created).to.equal(true);
    expect((await answered(() => c1.SubmitJob({ spec: spec('ended') }))).created).to.equal(true);
    await answered(() => c1.KillJob({ jobId: 'ended', reason: 'test' }));
    await fill();
    expect((await rpcError(c1.SubmitJob({ spec: spec('lost') }))).code).to.equal('UNAVAILABLE');

    // A retry of a submission the store holds: answered as with room (a definite refusal here
    // would tell the client that the job it made does not exist).
    expect(await answered(() => c1.SubmitJob({ spec: spec('kept') }))).to.deep.equal({ jobId: 'kept', created: false });
    const other = jobSpecToProto(
      normalizeJobSpec({ id: 'kept', name: 'kept', tasks: [{ name: 'map', instances: 2, resources: { cpu: 1, memory: 256 }, command: ['true'] }] }),
    );
    const conflict = await rpcError(c1.SubmitJob({ spec: other }));
    expect(conflict.code).to.equal('ALREADY_EXISTS');
    expect(conflict.message).to.match(/different spec/);
    // A batch: each job answered on its own; one with nothing the store holds is refused whole.
    const batch = await c1.SubmitJobs({ specs: [spec('kept'), spec('new-1')] });
    expect(batch.results.map((r) => [r.jobId, r.created, r.errorCode])).to.deep.equal([
      ['kept', false, ''],
      ['new-1', false, 'RESOURCE_EXHAUSTED'],
    ]);
    expect(batch.results[1]!.errorMessage).to.match(/etcd is out of space/);
    expect((await rpcError(c1.SubmitJobs({ specs: [spec('new-1'), spec('new-2')] }))).code).to.equal('RESOURCE_EXHAUSTED');
    // A dry run gets the verdicts the real submit gets now.
    const dry = await c1.SubmitJobs({ specs: [spec('kept'), spec('new-1')], dryRun: true });
    expect([dry.dryRun, dry.results]).to.deep.equal([true, batch.results]);
    expect((await rpcError(c1.SubmitJobs({ specs: [spec('new-1'), spec('new-2')], dryRun: true }))).code).to.equal('RESOURCE_EXHAUSTED');
    // Kills: an ended job is answered with its end, an unknown one NOT_FOUND, a running one refused.
    expect((await c1.KillJob({ jobId: 'ended', reason: 'again' })).job?.state).to.equal('JOB_STATE_KILLED');
    expect((await rpcError(c1.KillJob({ jobId: 'nope', reason: 'test' }))).code).to.equal('NOT_FOUND');
    expect((await rpcError(c1.KillJob({ jobId: 'kept', reason: 'test' }))).code).to.equal('RESOURCE_EXHAUSTED');
    expect((await c1.ListJobs({ states: [] })).jobs.map((j) => [j.jobId, j.state])).to.deep.equal([
      ['kept', 'JOB_STATE_SUBMITTED'],
      ['ended', 'JOB_STATE_KILLED'],
    ]);
  });

  it('a standby elected while etcd is out of space holds still from the start: no abdication cascade', async () => {
    const m1 = await startMaster();
    await until('m1 leads', () => m1.role === 'leader' && m1.epoch !== '');
    const lines: Array<{ level: string; msg: string }> = [];
    const m2 = await startMaster(lines);
    expect((await answered(() => client(m1).SubmitJob({ spec: spec('kept') }))).created).to.equal(true);
    await fill();
    // The leader goes away (resigning its lease: a delete, which etcd allows while full).
    await m1.stop();
    masters.splice(masters.indexOf(m1), 1);
    await until('m2 leads', () => m2.role === 'leader' && m2.epoch !== '');
    const c2 = client(m2);
    const st = await answered(() => c2.GetClusterStatus({}));
    expect(st.conditions.map((c) => c.type)).to.deep.equal(['StoreOutOfSpace']);
    expect((await answered(() => c2.ListJobs({ states: [] }))).jobs.map((j) => j.jobId)).to.deep.equal(['kept']);
    expect((await rpcError(c2.SubmitJob({ spec: spec('next') }))).code).to.equal('RESOURCE_EXHAUSTED');
    const epoch = m2.epoch;
    await sleep(3000);
    expect(m2.role).to.equal('leader');
    expect(m2.epoch).to.equal(epoch);
    expect(lines.filter((l) => l.msg === 'stepped down')).to.deep.equal([]);

    await freeSpace();
    const next = await until('a new term with room', () => (m2.role === 'leader' && m2.epoch !== epoch && m2.epoch !== '' ? m2.epoch : undefined));
    expect(BigInt(next) > BigInt(epoch)).to.equal(true);
    expect((await answered(() => c2.SubmitJob({ spec: spec('next') }))).created).to.equal(true);
  });
});
