/**
 * The simulated-node host against a real master (embedded store): its virtual nodes register, run
 * jobs end to end with in-process application masters, and report fake pids.
 */
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalCluster, LogTail, startNodeProcess, terminate, removeTree } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import { job } from '../../harness.js';
import { SIM_PID_BASE } from '../sim-driver.js';

const HOST = join(dirname(fileURLToPath(import.meta.url)), '..', 'agent-host.js');

describe('simulated agent host (embedded master)', function () {
  this.timeout(120_000);
  let cluster: LocalCluster | undefined;
  let host: ReturnType<typeof startNodeProcess> | undefined;
  let dir: string;
  let failed = false;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-sim-host-'));
    // Simulated hosts dial in plaintext: the cluster runs insecure.
    cluster = await LocalCluster.start({ dir, agents: 0, heartbeatIntervalMs: 300, logLevel: 'info', insecure: true });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    if (host) await terminate(host);
    await cluster?.stop();
    if (!failed) removeTree(dir);
    else process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  it('registers 20 virtual nodes and runs jobs to completion with in-process AMs', async () => {
    const logFile = join(dir, 'host.log');
    host = startNodeProcess(
      [HOST, '--master', cluster!.masterAddress, '--nodes', '20', '--prefix', 'h1', '--cpu', '4', '--memory', '8Gi', '--work-dir', join(dir, 'h1')],
      logFile,
    );
    const ready = await new LogTail(logFile, ['host ready']).waitFor((r) => r.msg === 'host ready', { what: '"host ready"', child: host });
    const agents = ready.agents as Array<{ nodeId: string; address: string }>;
    expect(agents).to.have.length(20);
    await cluster!.waitForNodes(20);
    const client = cluster!.client();
    try {
      const specs = [0, 1, 2].map((i) =>
        job({
          name: `sim-${i}`,
          env: { SIM_DURATION_MS: '300' },
          tasks: [{ name: 'work', instances: 10, resources: { cpu: 1, memory: 256 }, command: ['sim-worker'] }],
        }),
      );
      const ids = await Promise.all(specs.map((s) => client.submit(s).then((r) => r.jobId)));
      // While they run, the agents report fake pids.
      let sawPid = 0;
      for (let i = 0; i < 50 && sawPid === 0; i++) {
        for (const a of agents) {
          const c = connect(loadFuxiProto().AgentService, a.address);
          try {
            for (const w of (await c.GetAgentState({})).workers) if (w.state === 'WORKER_STATE_RUNNING') sawPid = w.pid;
          } finally {
            c.close();
          }
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(sawPid).to.be.at.least(SIM_PID_BASE);
      for (const id of ids) {
        let last;
        for await (const j of client.watch(id)) last = j;
        expect(last?.state, last?.message).to.equal('JOB_STATE_SUCCEEDED');
        expect(last?.tasks[0]?.succeeded).to.equal(10);
      }
    } finally {
      client.close();
    }
  });
});
