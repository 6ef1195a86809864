/**
 * Failure prediction acting on running attempts (ATLAS+), on a local cluster: a master, three
 * agents, real AMs and workers.
 *
 * Two long jobs start first, each with two 25 s instances preferring node-1: `moved` (prediction
 * on) and `left` (`failurePrediction: off`). Then three short jobs whose command fails on node-1
 * only (it checks $FUXI_NODE_ID) teach the master's model that node-1 fails its attempts: node-1 is
 * listed, and the master's next weighing of running attempts tells `moved`'s AM to move its
 * attempts off node-1. They run again elsewhere, not counted as failures, and `moved` succeeds;
 * `left`'s attempts on node-1 run to their end there.
 *
 * Every long worker appends "start|end <node> <instance> <attempt>" to a file of its job.
 */
import { expect } from 'chai';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient } from '@fuxi/client';
import type { LocalCluster } from '@fuxi/deploy';
import type { JobInfo__Output } from '@fuxi/proto';
import { job, startCluster, stopCluster, until } from '../harness.js';
import { removeTree } from '@fuxi/deploy';

describe('failure prediction moves running attempts off a failing host (local cluster)', function () {
  this.timeout(180_000);
  let cluster: LocalCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let failed = false;

  before(async function () {
    this.timeout(60_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-predict-'));
    // The jobs' workers (the agents' unprivileged worker user) write their marks here.
    chmodSync(dir, 0o1777);
    const config = join(dir, 'master.yaml');
    // Small numbers so a few dozen attempts train a model; moving costs 5 (the default 30 is for
    // a busy cluster); at most one host of three blocked.
    writeFileSync(
      config,
      [
        'failurePrediction:',
        '  minSamples: 20',
        '  retrainAfter: 10',
        '  trainIntervalMs: 1000',
        '  decideIntervalMs: 1000',
        '  reschedulePenalty: 5',
        '  maxBlockedFraction: 0.4',
        '',
      ].join('\n'),
    );
    cluster = await startCluster('predict', { agentCpu: '6', agentMemory: '4Gi', masterArgs: ['--config', config] });
    client = cluster.client();
    await cluster.waitForNodes(3);
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    await stopCluster(cluster, failed);
    if (!failed) removeTree(dir);
  });

  const lines = (name: string): string[][] => {
    const f = join(dir, `${name}.log`);
    return existsSync(f)
      ? readFileSync(f, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' '))
      : [];
  };

  const long = (name: string, prediction: string) =>
    job({
      id: name,
      name,
      failurePrediction: prediction,
      am: { cpu: '250m', memory: 128 },
      tasks: [
        {
          name: 'work',
          instances: 2,
          maxAttempts: 1,
          resources: { cpu: '500m', memory: 128 },
          locality: { nodes: ['node-1'] },
          command: [
            'sh',
            '-c',
            `echo "start $FUXI_NODE_ID $FUXI_INSTANCE $FUXI_ATTEMPT" >> ${join(dir, `${name}.log`)}; sleep 25; echo "end $FUXI_NODE_ID $FUXI_INSTANCE $FUXI_ATTEMPT" >> ${join(dir, `${name}.log`)}`,
          ],
        },
      ],
    });

  const flaky = (i: number) =>
    job({
      id: `flaky-${i}`,
      name: `flaky-${i}`,
      am: { cpu: '250m', memory: 128 },
      tasks: [
        {
          name: 'step',
          instances: 15,
          maxAttempts: 4,
          resources: { cpu: '250m', memory: 64 },
          command: ['sh', '-c', 'sleep 0.3; [ "$FUXI_NODE_ID" != node-1 ]'],
        },
      ],
    });

  it('lists the failing host and moves the running attempts of a job with prediction on, not of one with it off', async () => {
    await client.submit(long('moved', 'on'));
    await client.submit(long('left', 'off'));
    // Both long jobs run their attempts on node-1.
    await until(
      'the long jobs running on node-1',
      () => lines('moved').filter((l) => l[1] === 'node-1').length > 0 && lines('left').filter((l) => l[1] === 'node-1').length > 0,
      60_000,
      200,
    );
    for (let i = 0; i < 3; i++) await client.submit(flaky(i));

    // node-1 is listed by the model (gray or blocked).
    await until(
      'node-1 listed by failure prediction',
      async () => {
        const n1 = (await client.nodes()).find((n) => n.node?.nodeId === 'node-1');
        return n1 !== undefined && (n1.prediction === 'gray' || n1.prediction === 'blocked') ? n1 : undefined;
      },
      60_000,
      250,
    );

    // `moved`: each instance that started on node-1 started again elsewhere, and the job succeeded
    // with no failed attempt counted.
    const end = async (id: string): Promise<JobInfo__Output> =>
      until(
        `${id} ended`,
        async () => {
          const j = await client.get(id);
          return j.state === 'JOB_STATE_SUCCEEDED' || j.state === 'JOB_STATE_FAILED' || j.state === 'JOB_STATE_KILLED' ? j : undefined;
        },
        120_000,
        500,
      );
    const moved = await end('moved');
    const left = await end('left');
    const m = lines('moved');
    const onNode1 = m.filter((l) => l[0] === 'start' && l[1] === 'node-1' && l[3] === '1').map((l) => l[2]);
    expect(onNode1.length).to.be.greaterThan(0);
    for (const inst of onNode1) {
      const later = m.filter((l) => l[0] === 'start' && l[2] === inst && l[3] !== '1');
      expect(later.length, `instance ${inst} started again`).to.be.greaterThan(0);
      expect(
        later.every((l) => l[1] !== 'node-1'),
        `instance ${inst} moved off node-1`,
      ).to.equal(true);
      expect(
        m.some((l) => l[0] === 'end' && l[1] === 'node-1' && l[2] === inst && l[3] === '1'),
        `instance ${inst} stopped on node-1`,
      ).to.equal(false);
    }
    expect(moved.state).to.equal('JOB_STATE_SUCCEEDED');
    expect(moved.tasks[0]?.retries).to.equal(0);

    // `left` (prediction off): its attempts on node-1 ran to their end there, once.
    const l = lines('left');
    const leftOn1 = l.filter((x) => x[0] === 'start' && x[1] === 'node-1');
    expect(leftOn1.length).to.be.greaterThan(0);
    for (const s of leftOn1) expect(l.some((x) => x[0] === 'end' && x[1] === 'node-1' && x[2] === s[2] && x[3] === s[3])).to.equal(true);
    expect(l.every((x) => x[3] === '1')).to.equal(true);
    expect(left.state).to.equal('JOB_STATE_SUCCEEDED');
  });
});
