import { expect } from 'chai';
import { FuxiError } from '@fuxi/common';
import { FuxiClient } from '../sdk/fuxi-client.js';
import { parseDuration, runCli, type CliClient, type CliDeps } from '../cli/program.js';
import { FakeAgent, FakeMaster } from './fake-cluster.js';
import { Capture, mockNode } from './helpers.js';

const GOOD = [
  'name: wordcount',
  'tasks:',
  '  - name: map',
  '    instances: 2',
  '    resources: { cpu: 0.5, memory: 512Mi }',
  '    command: ["node", "map.mjs"]',
].join('\n');

interface Run {
  code: number;
  out: string;
  err: string;
  masters: string[][];
}

async function run(args: string[], over: Partial<CliDeps> & { files?: Record<string, string> } = {}): Promise<Run> {
  const stdout = new Capture();
  const stderr = new Capture();
  const masters: string[][] = [];
  const files = over.files ?? { 'job.yaml': GOOD };
  const code = await runCli(args, {
    makeClient:
      over.makeClient ??
      ((m) => {
        masters.push(m);
        return new Proxy({} as CliClient, {
          // Not a thenable (makeClient may return a promise of the client, which is awaited).
          get: (_t, p) => (p === 'then' ? undefined : p === 'close' ? () => {} : () => Promise.reject(new Error(`unexpected call ${String(p)}`))),
        });
      }),
    stdout,
    stderr,
    env: over.env ?? {},
    user: over.user ?? (() => 'tester'),
    readFile: (p) => {
      const t = files[p];
      if (t === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
      return t;
    },
  });
  return { code, out: stdout.text, err: stderr.text, masters };
}

describe('fuxi CLI', function () {
  this.timeout(20_000);

  describe('without a master', () => {
    it('hands --token-file (else $FUXI_TOKEN_FILE) to the client it makes', async () => {
      const seen: Array<{ tokenFile?: string } | undefined> = [];
      const makeClient = (_m: string[], _t?: unknown, auth?: { tokenFile?: string }) => {
        seen.push(auth);
        return { list: async () => [], close: () => {} } as unknown as CliClient;
      };
      await run(['--token-file', '/etc/fuxi/alice.token', 'list'], { makeClient, env: { FUXI_TOKEN_FILE: '/other', FUXI_INSECURE: '1' } });
      await run(['list'], { makeClient, env: { FUXI_TOKEN_FILE: '/from/env', FUXI_INSECURE: '1' } });
      await run(['list'], { makeClient, env: { FUXI_INSECURE: '1' } });
      expect(seen).to.deep.equal([{ tokenFile: '/etc/fuxi/alice.token' }, { tokenFile: '/from/env' }, {}]);
    });

    it('prints help with the exit codes, exit 0', async () => {
      const r = await run(['--help']);
      expect(r.code).to.equal(0);
      expect(r.out).to.include('Exit codes:');
      expect(r.out).to.include('4  master unavailable');
    });

    it('exits 2 on usage errors', async () => {
      for (const args of [[], ['bogus'], ['submit'], ['status'], ['-o', 'xml', 'list'], ['list', '--nope']]) {
        const r = await run(args);
        expect(r.code, args.join(' ')).to.equal(2);
        expect(r.err).to.match(/error:|Usage:/);
      }
    });

    it('rejects an invalid spec locally: exit 2, no master call', async () => {
      const files = { 'bad.yaml': GOOD.replace('cpu: 0.5', 'cpu: -1') };
      const r = await run(['submit', 'bad.yaml'], { files });
      expect(r.code).to.equal(2);
      expect(r.err).to.equal('error: bad.yaml: tasks[0].resources.cpu: must be greater than 0, got -1\n');
      expect(r.out).to.equal('');
      expect(r.masters).to.deep.equal([]);
    });

    it('reports malformed YAML, unknown fields and missing files with exit 2', async () => {
      const files = { 'broken.yaml': 'name: [x\n', 'typo.yaml': GOOD.replace('instances', 'instnaces') };
      const a = await run(['submit', 'broken.yaml'], { files });
      expect(a.code).to.equal(2);
      expect(a.err).to.match(/^error: broken\.yaml: invalid YAML at line \d+, column \d+: /);
      const b = await run(['submit', 'typo.yaml'], { files });
      expect(b.err).to.match(/^error: typo\.yaml: tasks\[0\]: unknown field "instnaces"/);
      const c = await run(['submit', 'missing.yaml'], { files });
      expect(c.code).to.equal(2);
      expect(c.err).to.equal('error: cannot read job spec missing.yaml: no such file\n');
    });

    it('checks --id, --state, INSTANCE and --attempt', async () => {
      expect((await run(['submit', 'job.yaml', '--id', 'Bad!'])).err).to.match(/^error: --id: must be 1-63 characters/);
      expect((await run(['list', '--state', 'sleepy'])).err).to.equal(
        'error: --state: unknown state "sleepy" (known: submitted, running, succeeded, failed, killed)\n',
      );
      expect((await run(['logs', 'j', 't', '-1'])).code).to.equal(2);
      expect((await run(['logs', 'j', 't', '0', '--attempt', '0'])).err).to.match(/^error: --attempt: must be an integer >= 1/);
    });

    it('checks node cordon / uncordon / drain arguments before calling the master', async () => {
      for (const args of [['node'], ['node', 'cordon'], ['node', 'drain'], ['node', 'uncordon'], ['node', 'reboot', 'n1']]) {
        const r = await run(args);
        expect(r.code, args.join(' ')).to.equal(2);
      }
      for (const bad of ['soon', '10', '-5s', '0s', '31d', '5s10', '1h 2m']) {
        const r = await run(['node', 'drain', 'n1', '--deadline', bad]);
        expect(r.code, bad).to.equal(2);
        expect(r.err, bad).to.match(/^error: --deadline: must be /);
        expect(r.masters, bad).to.deep.equal([]);
      }
    });

    it('parses drain deadlines', () => {
      expect(parseDuration('90s', 'd')).to.equal(90_000);
      expect(parseDuration('1h30m', 'd')).to.equal(5_400_000);
      expect(parseDuration('250ms', 'd')).to.equal(250);
      expect(parseDuration('1.5m', 'd')).to.equal(90_000);
      expect(parseDuration('30d', 'd')).to.equal(30 * 86_400_000);
    });

    it('uses --master, then FUXI_MASTER, then the default', async () => {
      expect((await run(['status', 'x', '--master', 'a:1,b:2'])).masters).to.deep.equal([['a:1', 'b:2']]);
      expect((await run(['status', 'x'], { env: { FUXI_MASTER: 'c:3' } })).masters).to.deep.equal([['c:3']]);
      expect((await run(['status', 'x'])).masters).to.deep.equal([['127.0.0.1:7070']]);
    });

    it('exits 4 when no master answers, without a stack trace', async () => {
      const r = await run(['--master', '127.0.0.1:1', 'status', 'x'], { makeClient: (m) => new FuxiClient({ masters: m, insecure: true, retryForMs: 200 }) });
      expect(r.code).to.equal(4);
      expect(r.err).to.match(/^error: master unavailable \(127\.0\.0\.1:1\): /);
      expect(r.err.trim().split('\n')).to.have.length(1);
    });

    it('exits 5 on unexpected errors, with one line', async () => {
      const r = await run(['status', 'x']);
      expect(r.code).to.equal(5);
      expect(r.err).to.equal('error: unexpected call get\n');
    });
  });

  describe('against a fake master', () => {
    let master: FakeMaster;
    let agent: FakeAgent;
    const real = (m: string[]) => new FuxiClient({ masters: m, insecure: true, retryForMs: 2000 });
    const fuxi = (args: string[], files?: Record<string, string>) =>
      run(['--master', master.address, ...args], { makeClient: real, ...(files ? { files } : {}) });

    beforeEach(async () => {
      master = await new FakeMaster().start();
      agent = await new FakeAgent().start();
    });
    afterEach(async () => {
      await master.stop();
      await agent.stop();
    });

    it('submits and prints the job id', async () => {
      const r = await fuxi(['submit', 'job.yaml', '--id', 'wc-7']);
      expect(r.code).to.equal(0);
      expect(r.out).to.equal('wc-7\n');
      const again = await fuxi(['submit', 'job.yaml', '--id', 'wc-7']);
      expect(again.out).to.equal('wc-7\n');
      expect(again.err).to.match(/already existed/);
      const json = await fuxi(['-o', 'json', 'submit', 'job.yaml', '--id', 'wc-8']);
      expect(JSON.parse(json.out)).to.deep.equal({ jobId: 'wc-8', created: true });
    });

    it('submit -f: many jobs from JSON Lines in one call; a bad line is an error naming it, and nothing is sent', async () => {
      const line = (id: string) => JSON.stringify({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] });
      const files = { 'jobs.jsonl': `${line('j1')}\n\n# a comment\n${line('j2')}\n`, 'bad.jsonl': `${line('k1')}\n{"name": "k2", "tasks": []}\n` };
      const r = await fuxi(['submit', '-f', 'jobs.jsonl'], files);
      expect(r.code).to.equal(0);
      expect(r.out).to.equal('j1\tsubmitted\nj2\tsubmitted\n');
      expect(master.batches).to.deep.equal([2]);
      expect(master.dryRunBatches).to.deep.equal([2]); // checked by the master first
      const bad = await fuxi(['submit', '-f', 'bad.jsonl'], files);
      expect(bad.code).to.equal(2);
      expect(bad.err).to.match(/bad\.jsonl:2: tasks: must contain at least one task/);
      expect(master.batches).to.deep.equal([2]);
      // The same id on two lines: refused before anything is sent, naming both lines.
      const dup = await fuxi(['submit', '-f', 'dup.jsonl'], { ...files, 'dup.jsonl': `${line('d1')}\n${line('d2')}\n${line('d1')}\n` });
      expect(dup.code).to.equal(2);
      expect(dup.err).to.match(/dup\.jsonl:3: id: "d1" is the id of the job at dup\.jsonl:1 too/);
      expect(master.batches).to.deep.equal([2]);
      const both = await fuxi(['submit', 'job.yaml', '-f', 'jobs.jsonl'], files);
      expect([both.code, both.err]).to.deep.equal([2, 'error: --jobs: takes the jobs from its file: give no job file, --id or --array with it\n']);
    });

    it('submit -f: lines the master refuses (a dry run first) submit nothing; each refusal names its line and job id', async () => {
      const line = (id: string, over: Record<string, unknown> = {}) =>
        JSON.stringify({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }], ...over });
      const text = [line('m1'), '# the bad ones', line('m2', { quotaGroup: 'nope' }), '', line('m3'), line('m4', { quotaGroup: 'gold' }), line('m5')].join(
        '\n',
      );
      const files = { 'jobs.jsonl': text };
      const r = await fuxi(['submit', '-f', 'jobs.jsonl'], files);
      expect(r.code).to.equal(2);
      expect(r.out).to.equal(
        [
          'm2\trefused: jobs.jsonl:3: quotaGroup: unknown quota group "nope" (known: default)',
          'm4\trefused: jobs.jsonl:6: quotaGroup: unknown quota group "gold" (known: default)',
          '',
        ].join('\n'),
      );
      expect(r.err).to.equal('error: 2 of 5 jobs refused (jobs.jsonl lines 3, 6); nothing was submitted\n');
      expect(master.dryRunBatches).to.deep.equal([5]);
      expect(master.batches).to.deep.equal([]);
      expect([...master.jobs.keys()]).to.deep.equal([]);
      const json = await fuxi(['-o', 'json', 'submit', '-f', 'jobs.jsonl'], files);
      expect(JSON.parse(json.out)).to.deep.equal([
        { jobId: 'm2', line: 3, created: false, error: 'quotaGroup: unknown quota group "nope" (known: default)' },
        { jobId: 'm4', line: 6, created: false, error: 'quotaGroup: unknown quota group "gold" (known: default)' },
      ]);
      // Once the master takes every line, the file is submitted (a line without an id is checked
      // and submitted under the same id, made before the check).
      master.quotaGroups.add('nope').add('gold');
      const ok = await fuxi(['-o', 'json', 'submit', '-f', 'jobs.jsonl'], {
        'jobs.jsonl': `${text}\n${JSON.stringify({ name: 'anon', tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] })}`,
      });
      expect(ok.code).to.equal(0);
      const rows = JSON.parse(ok.out) as Array<{ jobId: string; line: number; created: boolean }>;
      expect(rows.map((x) => [x.line, x.created])).to.deep.equal([
        [1, true],
        [3, true],
        [5, true],
        [6, true],
        [7, true],
        [8, true],
      ]);
      expect(rows[5]!.jobId).to.match(/^anon-[0-9a-f]{12}$/);
      expect([...master.jobs.keys()]).to.deep.equal(['m1', 'm2', 'm3', 'm4', 'm5', rows[5]!.jobId]);
      expect(master.batches).to.deep.equal([6]);
    });

    it('submit -f: a line the real submit refuses after the check passed (the cluster changed in between) is named too', async () => {
      const line = (id: string) => JSON.stringify({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] });
      const calls: boolean[] = [];
      const client = {
        submitMany: async (specs: Array<{ jobId: string }>, opts: { dryRun?: boolean } = {}) => {
          calls.push(opts.dryRun === true);
          return specs.map((x, i) =>
            !opts.dryRun && i === 1
              ? { jobId: x.jobId, created: false, error: new FuxiError('ALREADY_EXISTS', 'job array "r2" already exists') }
              : { jobId: x.jobId, created: true },
          );
        },
        close: () => {},
      } as unknown as CliClient;
      const r = await run(['submit', '-f', 'jobs.jsonl'], { makeClient: () => client, files: { 'jobs.jsonl': `${line('r1')}\n\n${line('r2')}\n` } });
      expect(calls).to.deep.equal([true, false]);
      expect([r.code, r.out, r.err]).to.deep.equal([
        2,
        'r1\tsubmitted\nr2\trefused: jobs.jsonl:3: job array "r2" already exists\n',
        'error: 1 of 2 jobs refused\n',
      ]);
    });

    it('submit -f: a master that does not know dry runs is an error, not an all-or-nothing submit it cannot keep', async () => {
      master.knowsDryRun = false;
      const line = (id: string) => JSON.stringify({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] });
      const r = await fuxi(['submit', '-f', 'jobs.jsonl'], { 'jobs.jsonl': `${line('o1')}\n${line('o2')}\n` });
      expect(r.code).to.not.equal(0);
      expect(r.err).to.match(/the master does not know dry runs .* the 2 jobs sent to be checked were submitted \(o1, o2\)/);
      expect(master.batches).to.deep.equal([2]); // the "dry run" the old master took as a submit; nothing after it
    });

    it('submit --array with a limit; list, status, wait and kill take the array id', async () => {
      const r = await fuxi(['submit', 'job.yaml', '--id', 'sw', '--array', '0-4:2,7%2']);
      expect(r.code).to.equal(0);
      expect(r.out.split('\n')[0]).to.equal('array sw: 4 jobs');
      expect([...master.jobs.keys()]).to.deep.equal(['sw_0', 'sw_2', 'sw_4', 'sw_7']);
      const list = await fuxi(['list', '--array', 'sw']);
      expect(list.out.split('\n').filter((l) => l.startsWith('sw_'))).to.have.length(4);
      master.update('sw_0', { state: 'JOB_STATE_SUCCEEDED' });
      const status = await fuxi(['status', 'sw']);
      expect(status.out).to.match(/array: +sw \(4 jobs\)/);
      expect(status.out).to.match(/1 SUCCEEDED/);
      master.update('sw_4', { message: 'held: array sw has 2 of at most 2 members running' });
      const waiting = fuxi(['wait', 'sw']);
      await new Promise((res) => setTimeout(res, 200));
      const killed = await fuxi(['kill', 'sw']);
      expect(killed.out).to.equal('array sw: 3 of 4 jobs killed\n');
      // The held member first: an active one's end would have admitted it, to be killed right after.
      expect(master.killed).to.deep.equal(['sw', 'sw_4', 'sw_2', 'sw_7']);
      const w = await waiting;
      expect(w.code).to.equal(1);
      expect(w.out.split('\n').filter(Boolean)).to.have.length(4);
      const badRange = await fuxi(['submit', 'job.yaml', '--array', '5-1']);
      expect([badRange.code, badRange.err]).to.deep.equal([2, 'error: --array: range 5-1 ends before it starts\n']);
      // Numbers past int32, a range too large to walk, a limit out of range, member ids over 63
      // characters: refused at once, before any member is sent (no half-made array).
      const sent = master.jobs.size;
      const refused = async (args: string[], pattern: RegExp) => {
        const x = await fuxi(['submit', 'job.yaml', ...args]);
        expect([x.code, x.err], args.join(' ')).to.satisfy(([code, e]: [number, string]) => code === 2 && pattern.test(e));
      };
      await refused(['--array', '9007199254740993'], /--array: .*at most 2147483647/);
      await refused(['--array', '0-99999999999:1'], /--array: .*at most 2147483647/);
      await refused(['--array', '0-2000000000'], /--array: makes more than 100000 members/);
      await refused(['--array', '0-3%99999999999'], /--array: %N must be from 1 to 2147483647/);
      await refused(['--id', 'arr', '--array', '2147483646-2147483649'], /--array: .*at most 2147483647/);
      await refused(['--id', 'a'.repeat(61), '--array', '8-11'], /arrayId: .*member ids of 64 characters/);
      expect(master.jobs.size).to.equal(sent);
    });

    it('submit --wait: exit 0 on success, line per state change without a TTY', async () => {
      const p = fuxi(['submit', 'job.yaml', '--id', 'w1', '--wait']);
      await new Promise((r) => setTimeout(r, 300));
      master.update('w1', { state: 'JOB_STATE_RUNNING' });
      master.update('w1', {
        state: 'JOB_STATE_SUCCEEDED',
        tasks: [{ name: 'map', total: 2, pending: 0, running: 0, succeeded: 2, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 }],
      });
      const r = await p;
      expect(r.code).to.equal(0);
      expect(r.out).to.equal('w1\n');
      expect(r.err.split('\n')).to.deep.equal([
        'job w1: SUBMITTED 0/2 succeeded [map 0/2]',
        'job w1: RUNNING 0/2 succeeded [map 0/2]',
        'job w1: SUCCEEDED 2/2 succeeded [map 2/2]',
        'job w1 SUCCEEDED',
        '',
      ]);
    });

    it('submit --wait: exit 1 when the job fails, with its message', async () => {
      const p = fuxi(['-o', 'json', 'submit', 'job.yaml', '--id', 'w2', '--wait']);
      await new Promise((r) => setTimeout(r, 300));
      master.update('w2', { state: 'JOB_STATE_FAILED', message: 'map/1 failed 3 times' });
      const r = await p;
      expect(r.code).to.equal(1);
      expect(r.err).to.match(/job w2 FAILED: map\/1 failed 3 times\n$/);
      const out = JSON.parse(r.out);
      expect(out.jobId).to.equal('w2');
      expect(out.job.state).to.equal('JOB_STATE_FAILED');
    });

    it('status, list, kill', async () => {
      await fuxi(['submit', 'job.yaml', '--id', 's1']);
      const st = await fuxi(['status', 's1']);
      expect(st.code).to.equal(0);
      expect(st.out).to.include('state:      SUBMITTED');
      expect(st.out).to.match(/map\s+0%\s+2\s+2\s+0\s+0\s+0\s+0/);
      const stj = JSON.parse((await fuxi(['-o', 'json', 'status', 's1'])).out);
      expect(stj.jobId).to.equal('s1');
      expect(stj.state).to.equal('JOB_STATE_SUBMITTED');

      expect((await fuxi(['list'])).out).to.match(/^JOB.*\ns1\s+wordcount\s+SUBMITTED/);
      expect((await fuxi(['list', '--state', 'running'])).out).to.equal('(no jobs)\n');
      expect(JSON.parse((await fuxi(['-o', 'json', 'list', '--state', 'submitted,running'])).out)).to.have.length(1);

      const k = await fuxi(['kill', 's1', '--reason', 'test']);
      expect(k.code).to.equal(0);
      expect(k.out).to.equal('job s1 KILLED: killed: test\n');
    });

    it('status of an unknown job exits 3', async () => {
      const r = await fuxi(['status', 'nope']);
      expect(r.code).to.equal(3);
      expect(r.err).to.equal('error: job "nope" not found\n');
    });

    it('nodes', async () => {
      master.nodes = [mockNode('n1', agent.address)];
      const r = await fuxi(['nodes']);
      expect(r.out).to.match(/^NODE\s+ADDRESS.*\nn1\s+127\.0\.0\.1:\d+\s+r1\s+ready\s+cpu=8 mem=16Gi/);
      expect(JSON.parse((await fuxi(['-o', 'json', 'nodes'])).out)[0].node.nodeId).to.equal('n1');
    });

    it('node cordon, drain, uncordon: who asks, why, the deadline; nodes shows them', async () => {
      master.nodes = [mockNode('n1', agent.address), mockNode('n2', agent.address)];
      const c = await fuxi(['node', 'cordon', 'n1', '--reason', 'bad disk']);
      expect(c.code).to.equal(0);
      expect(c.out).to.equal('node n1 cordoned\n');
      const d = await fuxi(['-o', 'json', 'node', 'drain', 'n2', '--reason', 'upgrade', '--deadline', '2m']);
      expect(d.code).to.equal(0);
      expect(JSON.parse(d.out).admin).to.deep.include({ state: 'draining', reason: 'upgrade', by: 'tester' });
      expect(master.adminRequests).to.deep.equal([
        { method: 'CordonNode', nodeId: 'n1', reason: 'bad disk', requestedBy: 'tester' },
        { method: 'DrainNode', nodeId: 'n2', reason: 'upgrade', requestedBy: 'tester', deadlineMs: '120000' },
      ]);
      const table = (await fuxi(['nodes'])).out.split('\n');
      expect(table[0]).to.match(/\sBY\s+SINCE\s+REASON$/);
      expect(table[1]).to.match(/^n1\s.*\scordoned\s.*\stester\s+\S+\s+bad disk$/);
      expect(table[2]).to.match(/^n2\s.*\sdraining until \S+\s.*\stester\s+\S+\s+upgrade$/);
      const u = await fuxi(['node', 'uncordon', 'n1']);
      expect(u.out).to.equal('node n1 uncordoned\n');
      expect(master.nodes[0]!.admin).to.equal(null);
      const missing = await fuxi(['node', 'cordon', 'nope']);
      expect(missing.code).to.equal(3);
      expect(missing.err).to.equal('error: node "nope" not found\n');
    });

    it('testbed create, list, delete; nodes shows the TESTBED column', async () => {
      master.nodes = [mockNode('n1', agent.address), mockNode('n2', agent.address)];
      const c = await fuxi(['testbed', 'create', 'ml', '--group', 'research', '--hosts', 'n1', '--start', '2030-01-01T00:00:00Z', '--for', '2h']);
      expect(c.code).to.equal(0);
      expect(c.out).to.equal(
        'testbed ml for group research: n1 (2030-01-01T00:00:00Z .. 2030-01-01T02:00:00Z)\n' +
          '  n1: 2 workers of other groups running; they finish there, no new ones start\n',
      );
      expect(master.testbedRequests[0]).to.deep.include({ name: 'ml', quotaGroup: 'research', hosts: ['n1'], label: '', count: 0, requestedBy: 'tester' });
      expect(master.testbedRequests[0]?.endMs).to.equal(String(Date.parse('2030-01-01T02:00:00Z')));
      const list = await fuxi(['testbed', 'list']);
      expect(list.out.split('\n')[0]).to.match(/^NAME\s+GROUP\s+HOSTS\s+WINDOW\s+ACTIVE\s+SELECTOR$/);
      expect(list.out.split('\n')[1]).to.match(/^ml\s+research\s+n1\s+2030-01-01T00:00:00Z \.\. 2030-01-01T02:00:00Z\s+yes\s+hosts$/);
      expect(JSON.parse((await fuxi(['testbed', 'list', '--json'])).out)[0]).to.deep.include({ name: 'ml', hosts: ['n1'] });
      const table = (await fuxi(['nodes'])).out.split('\n');
      expect(table[0]).to.match(/\sTESTBED$/);
      expect(table[1]).to.match(/\sml$/);
      expect(table[2]).to.match(/\s-$/);
      expect((await fuxi(['testbed', 'delete', 'ml'])).out).to.equal('testbed ml deleted\n');
      const missing = await fuxi(['testbed', 'delete', 'ml']);
      expect(missing.code).to.equal(3);
      const two = await fuxi(['testbed', 'create', 'x', '--group', 'g', '--hosts', 'n1', '--count', '2']);
      expect(two.code).to.equal(2);
      expect(two.err).to.match(/--hosts\/--label\/--count: give exactly one/);
    });

    it('logs: raw bytes to stdout; exit 3 when no node has them', async () => {
      master.nodes = [mockNode('n1', agent.address)];
      agent.logs.set('j1/map/1/stderr/2', ['oops\n', 'bye\n']);
      const r = await fuxi(['logs', 'j1', 'map', '1', '--stderr', '--attempt', '2']);
      expect(r.code).to.equal(0);
      expect(r.out).to.equal('oops\nbye\n');
      const missing = await fuxi(['logs', 'j1', 'map', '2']);
      expect(missing.code).to.equal(3);
      expect(missing.err).to.equal('error: log of j1/map/2 (stdout) not found on any node\n');
    });
  });
});
