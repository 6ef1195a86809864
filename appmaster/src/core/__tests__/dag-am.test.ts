import { expect } from 'chai';
import { FailedPreconditionError, StaleEpochError } from '@fuxi/common';
import { localitiesOf, spread } from '../dag-am.js';
import { asg, deltasOf, ev, finishOf, Harness, mockJob, mockTask, planIds, plansOf, returnsOf, stopsOf, unitsOf } from './factories.js';

const twoStage = () => mockJob([mockTask({ name: 'map', instances: 4 }), mockTask({ name: 'reduce', instances: 2, dependsOn: ['map'], priority: 9 })]);

describe('DagAppMaster', () => {
  describe('a 2-stage DAG', () => {
    it('runs map (4) then reduce (2) to success through assignments and worker events', () => {
      const h = new Harness();
      let fx = h.start(twoStage());
      expect(unitsOf(fx)).to.deep.equal(['map']);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 4 }]);
      const req = fx.find((e) => e.kind === 'request');
      expect(req).to.deep.include({ units: [{ suId: 'map', resource: { cpuMilli: 1000, memoryMb: 1024 }, priority: 5 }] });

      fx = h.assign(asg('map', 'n1', 2), asg('map', 'n2', 2));
      expect(fx.filter((e) => e.kind === 'plan').map((e) => e.kind === 'plan' && [e.nodeId, e.nodeAddress])).to.deep.equal([
        ['n1', 'n1.addr:7071'],
        ['n2', 'n2.addr:7071'],
      ]);
      expect(planIds(fx)).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1', 'map.3.1']);
      expect(deltasOf(fx)).to.deep.equal([]);

      fx = h.succeed('n1', 'map.0.1', 'map.1.1');
      expect(returnsOf(fx)).to.deep.equal([
        { suId: 'map', nodeId: 'n1', slots: 1 },
        { suId: 'map', nodeId: 'n1', slots: 1 },
      ]);
      expect(unitsOf(fx)).to.deep.equal([]);
      fx = h.succeed('n2', 'map.2.1', 'map.3.1');
      expect(unitsOf(fx)).to.deep.equal(['reduce']);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'reduce', location: '', delta: 2 }]);
      expect(fx.find((e) => e.kind === 'request')).to.deep.include({ units: [{ suId: 'reduce', resource: { cpuMilli: 1000, memoryMb: 1024 }, priority: 9 }] });

      // The master drops the returned map slots, then assigns reduce slots.
      expect(h.assign(asg('map', 'n1', 0), asg('map', 'n2', 0))).to.deep.equal([]);
      fx = h.assign(asg('reduce', 'n2', 2));
      expect(planIds(fx)).to.deep.equal(['reduce.0.1', 'reduce.1.1']);
      expect(finishOf(h.succeed('n2', 'reduce.0.1'))).to.equal(undefined);
      fx = h.succeed('n2', 'reduce.1.1');
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n2', slots: 1 }]);
      expect(finishOf(fx)).to.deep.equal({ kind: 'finish', succeeded: true, message: '2 tasks succeeded' });
      expect(fx.map((e) => e.kind)).to.deep.equal(['snapshot', 'return', 'finish']);
      expect(h.am.result).to.deep.equal({ succeeded: true, message: '2 tasks succeeded' });
      expect(h.am.progress()).to.deep.equal([
        { name: 'map', total: 4, pending: 0, running: 0, succeeded: 4, failed: 0, retries: 0, reexecutions: 0, progress: 1, backups: 0 },
        { name: 'reduce', total: 2, pending: 0, running: 0, succeeded: 2, failed: 0, retries: 0, reexecutions: 0, progress: 1, backups: 0 },
      ]);
      // Nothing more happens after the finish.
      expect(h.assign(asg('reduce', 'n2', 0))).to.deep.equal([]);
      expect(h.am.tick(h.now + 1e9)).to.deep.equal([]);
    });

    it('substitutes ${...} in argv, env and cwd and merges job env under task env', () => {
      const h = new Harness();
      const task = mockTask({
        instances: 3,
        command: {
          argv: ['sh', '-c', 'echo ${job} ${task} ${instance}/${instances} try ${attempt} ${unknown}'],
          env: { OUT: '/out/${task}-${instance}', SHARED: 'task' },
          cwd: '/w/${job}',
        },
      });
      h.start(mockJob([task], { env: { SHARED: 'job', ONLY_JOB: '${task}' } }));
      const fx = h.assign(asg('map', 'n1', 1));
      expect(plansOf(fx)).to.deep.equal([
        {
          workerId: 'map.0.1',
          suId: 'map',
          task: 'map',
          instance: 0,
          attempt: 1,
          resource: { cpuMilli: 1000, memoryMb: 1024 },
          command: {
            argv: ['sh', '-c', 'echo job-1 map 0/3 try 1 ${unknown}'],
            env: {
              FUXI_JOB_ID: 'job-1',
              FUXI_TASK: 'map',
              FUXI_INSTANCE: '0',
              FUXI_INSTANCES: '3',
              FUXI_ATTEMPT: '1',
              OUT: '/out/map-0',
              SHARED: 'task',
              ONLY_JOB: 'map',
            },
            cwd: '/w/job-1',
          },
        },
      ]);
    });
  });

  describe('dependsOn gating', () => {
    it('asks for a task only when every instance of every dependency has succeeded (diamond)', () => {
      const h = new Harness();
      const spec = mockJob([
        mockTask({ name: 'a', instances: 2 }),
        mockTask({ name: 'b', dependsOn: ['a'] }),
        mockTask({ name: 'c', dependsOn: ['a'] }),
        mockTask({ name: 'd', dependsOn: ['b', 'c'] }),
      ]);
      expect(unitsOf(h.start(spec))).to.deep.equal(['a']);
      h.assign(asg('a', 'n1', 2));
      expect(unitsOf(h.succeed('n1', 'a.0.1'))).to.deep.equal([]);
      expect(h.progressOf('b')).to.deep.include({ pending: 1 });
      expect(unitsOf(h.succeed('n1', 'a.1.1'))).to.deep.equal(['b', 'c']);
      h.assign(asg('b', 'n1', 1), asg('c', 'n2', 1));
      expect(unitsOf(h.succeed('n1', 'b.0.1'))).to.deep.equal([]);
      expect(unitsOf(h.succeed('n2', 'c.0.1'))).to.deep.equal(['d']);
      h.assign(asg('d', 'n1', 1));
      expect(finishOf(h.succeed('n1', 'd.0.1'))).to.deep.include({ succeeded: true });
    });

    it('finishes at once for a job without tasks, and skips tasks with 0 instances', () => {
      expect(finishOf(new Harness().start(mockJob([])))).to.deep.include({ succeeded: true });
      const h = new Harness();
      const fx = h.start(mockJob([mockTask({ name: 'none', instances: 0 }), mockTask({ name: 'after', dependsOn: ['none'] })]));
      expect(unitsOf(fx)).to.deep.equal(['after']);
    });
  });

  describe('requests', () => {
    it('sends each SU config once and only deltas afterwards', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed'));
      // The slot on n1 is free but map.0 failed there and nothing else is pending: back to the master.
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(unitsOf(fx)).to.deep.equal([]);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      // map.1 fails on n2: map.0 (which failed on n1, not n2) takes that slot; map.1 waits for the
      // slot already asked for.
      fx = h.events('n2', ev('map.1.1', 'failed'));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      expect(deltasOf(fx)).to.deep.equal([]);
      fx = h.events('n2', ev('map.0.2', 'failed'));
      expect(unitsOf(fx)).to.deep.equal([]);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      expect(h.am.outstandingRequests()).to.deep.equal([{ suId: 'map', location: '', count: 2 }]);
      expect(h.am.units()).to.deep.equal([{ suId: 'map', resource: { cpuMilli: 1000, memoryMb: 1024 }, priority: 5 }]);
    });

    it("a worker killed for memory past its grant (OOM) is the task's failure: the retry may run on the same node", () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1 })]));
      h.assign(asg('map', 'n1', 1));
      const fx = h.events('n1', ev('map.0.1', 'failed', { exitCode: 137, message: 'OOM: used 1024 MB of 1024 MB' }));
      // Not a node fault: the slot on n1 is not returned, the retry takes it.
      expect(returnsOf(fx)).to.deep.equal([]);
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      // It still counts as an attempt (3 at most), and the job's message says why.
      expect(planIds(h.events('n1', ev('map.0.2', 'failed', { exitCode: 137, message: 'OOM: used 1024 MB of 1024 MB' })))).to.deep.equal(['map.0.3']);
      const finish = finishOf(h.events('n1', ev('map.0.3', 'failed', { exitCode: 137, message: 'OOM: used 1024 MB of 1024 MB' })));
      expect(finish?.succeeded).to.equal(false);
      expect(finish?.message).to.match(/failed after 3 attempts: exit code 137 \(OOM: used 1024 MB of 1024 MB\)$/);
    });

    it('spreads the first request over locality hints (node:, rack:), one delta per location; retries ask anywhere', () => {
      expect(spread(4, ['node:n1', 'node:n2', 'rack:r1'])).to.deep.equal([
        ['node:n1', 2],
        ['node:n2', 1],
        ['rack:r1', 1],
      ]);
      expect(spread(1, ['node:n1', 'rack:r1'])).to.deep.equal([['node:n1', 1]]);
      expect(localitiesOf(mockTask())).to.deep.equal(['']);

      const h = new Harness();
      const fx = h.start(mockJob([mockTask({ instances: 4, locality: { nodes: ['n1', 'n2'], racks: ['r1'] } })]));
      expect(deltasOf(fx)).to.deep.equal([
        { suId: 'map', location: 'node:n1', delta: 2 },
        { suId: 'map', location: 'node:n2', delta: 1 },
        { suId: 'map', location: 'rack:r1', delta: 1 },
      ]);
      // Two slots on n1 satisfy the node:n1 request; one on n3 (rack r1, unknown to the AM) satisfies another.
      h.assign(asg('map', 'n1', 2), asg('map', 'n3', 1));
      expect(h.am.outstandingRequests().reduce((s, r) => s + r.count, 0)).to.equal(1);
      expect(h.am.outstandingRequests()).to.deep.include({ suId: 'map', location: 'node:n2', count: 1 });
      // map.0 fails on n1: map.3 (still waiting for node:n2) takes the slot instead.
      let retry = h.events('n1', ev('map.0.1', 'failed'));
      expect(planIds(retry)).to.deep.equal(['map.3.1']);
      expect(deltasOf(retry)).to.deep.equal([]);
      // map.1 fails on n1 too: nobody can use n1 now, so it goes back and the retry asks anywhere.
      retry = h.events('n1', ev('map.1.1', 'failed'));
      expect(returnsOf(retry)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(deltasOf(retry)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    });

    it('uses the task priority when set, else the job priority', () => {
      const h = new Harness();
      const fx = h.start(mockJob([mockTask({ name: 'a' }), mockTask({ name: 'b', priority: 7 })], { priority: 3 }));
      const req = fx.find((e) => e.kind === 'request');
      expect(req?.kind === 'request' && req.units.map((u) => [u.suId, u.priority])).to.deep.equal([
        ['a', 3],
        ['b', 7],
      ]);
    });
  });

  describe('slots', () => {
    it('reuses a finished slot for the next pending instance and cancels the request it no longer needs', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 3 })]));
      let fx = h.assign(asg('map', 'n1', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.1']);
      expect(h.am.outstandingRequests()).to.deep.equal([{ suId: 'map', location: '', count: 2 }]);
      fx = h.succeed('n1', 'map.0.1');
      expect(planIds(fx)).to.deep.equal(['map.1.1']);
      expect(returnsOf(fx)).to.deep.equal([]);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: -1 }]);
      fx = h.succeed('n1', 'map.1.1');
      expect(planIds(fx)).to.deep.equal(['map.2.1']);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: -1 }]);
      expect(h.am.outstandingRequests()).to.deep.equal([]);
      fx = h.succeed('n1', 'map.2.1');
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(finishOf(fx)).to.deep.include({ succeeded: true });
    });

    it('returns slots assigned beyond need as soon as they appear', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      let fx = h.assign(asg('map', 'n1', 3));
      expect(planIds(fx)).to.deep.equal(['map.0.1', 'map.1.1']);
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(h.am.outstandingRequests()).to.deep.equal([]);
      // A late message still showing 3 does not resurrect the returned slot...
      fx = h.am.assignments({ seq: ++h.seq, full: true, assignments: [asg('map', 'n1', 3)] }, h.now);
      expect(fx).to.deep.equal([]);
      // ...and the drop to 2 settles it.
      expect(h.assign(asg('map', 'n1', 2))).to.deep.equal([]);
      // A slot that races in after the need is gone goes straight back.
      fx = h.assign(asg('map', 'n2', 1));
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n2', slots: 1 }]);
      expect(planIds(fx)).to.deep.equal([]);
      // Slots of SUs that are not ours (the AM's own) are left alone.
      expect(h.assign(asg('__am__', 'n1', 1))).to.deep.equal([]);
    });

    it('treats a returned slot as gone after returnSettleMs when the master never shows the drop', () => {
      const h = new Harness({ returnSettleMs: 5000 });
      h.start(mockJob([mockTask({ instances: 1 })]));
      h.assign(asg('map', 'n1', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed'));
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      // The master took the slot back and placed the new request on n1 again, in one message: no change.
      expect(h.assign(asg('map', 'n1', 1))).to.deep.equal([]);
      h.now += 4999;
      expect(h.am.tick(h.now)).to.deep.equal([]);
      h.now += 1;
      fx = h.am.tick(h.now);
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
    });

    it('settles returned slots exactly with a full table that reflects them', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1 })]));
      h.assign(asg('map', 'n1', 1));
      const fx = h.events('n1', ev('map.0.1', 'failed'));
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(h.am.returnsIssued).to.equal(1);
      // The master applied the return and placed the new request on n1 again; the AM missed both
      // pushes and gets the full table in the answer to an UpdateRequests queued after the return.
      const full = h.am.assignments({ seq: 3, full: true, assignments: [asg('map', 'n1', 1)], returnsReflected: 1 }, h.now);
      expect(planIds(full)).to.deep.equal(['map.0.2']);
      expect(h.am.outstandingRequests()).to.deep.equal([]);
    });

    it('keeps returns issued after the request was queued out of a full table', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      h.assign(asg('map', 'n1', 2));
      h.succeed('n1', 'map.0.1');
      expect(h.am.returnsIssued).to.equal(1);
      // The table predates the return (returnsReflected 0): the slot stays returned.
      expect(h.am.assignments({ seq: 2, full: true, assignments: [asg('map', 'n1', 2)], returnsReflected: 0 }, h.now)).to.deep.equal([]);
      expect(h.am.assignments({ seq: 3, full: true, assignments: [asg('map', 'n1', 1)], returnsReflected: 1 }, h.now)).to.deep.equal([]);
      expect(h.am.assignmentTable()).to.deep.equal([asg('map', 'n1', 1)]);
    });

    it('reports what it holds', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      h.assign(asg('map', 'n2', 1), asg('map', 'n1', 1));
      expect(h.am.assignmentTable()).to.deep.equal([asg('map', 'n1', 1), asg('map', 'n2', 1)]);
      expect(h.am.workers().map((w) => [w.workerId, w.nodeId, w.started])).to.deep.equal([
        ['map.0.1', 'n1', false],
        ['map.1.1', 'n2', false],
      ]);
      h.events('n1', ev('map.0.1', 'running'));
      expect(h.am.workers()[0]).to.deep.include({ started: true });
      expect(h.am.isCurrentWorker('map.0.1')).to.equal(true);
      expect(h.am.isCurrentWorker('map.0.2')).to.equal(false);
    });
  });

  describe('retries', () => {
    it('retries an instance that fails twice and succeeds on the third attempt', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1, maxAttempts: 3 })]));
      h.assign(asg('map', 'n1', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed'));
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      fx = h.assign(asg('map', 'n1', 0), asg('map', 'n2', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      fx = h.events('n2', ev('map.0.2', 'killed', { signal: 'SIGKILL' }));
      expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 0, retries: 2 });
      fx = h.assign(asg('map', 'n2', 0), asg('map', 'n3', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.3']);
      expect(h.progressOf('map')).to.deep.include({ running: 1 });
      fx = h.succeed('n3', 'map.0.3');
      expect(finishOf(fx)).to.deep.include({ succeeded: true });
      expect(h.progressOf('map')).to.deep.include({ name: 'map', total: 1, pending: 0, running: 0, succeeded: 1, failed: 0, retries: 2, reexecutions: 0 });
    });

    it('fails the job when an instance runs out of attempts: stops the others, returns every slot', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 3, maxAttempts: 2 })]));
      h.assign(asg('map', 'n1', 2), asg('map', 'n2', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed', { exitCode: 1, message: 'boom' }));
      expect(planIds(fx)).to.deep.equal([]); // only n1 is free and map.0 failed there
      fx = h.assign(asg('map', 'n1', 1), asg('map', 'n3', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      fx = h.events('n3', ev('map.0.2', 'failed', { exitCode: 3, message: 'Error: input missing' }));
      const finish = finishOf(fx);
      expect(finish).to.deep.equal({
        kind: 'finish',
        succeeded: false,
        message: 'task "map" instance 0 failed after 2 attempts: exit code 3 (Error: input missing)',
      });
      expect(fx.map((e) => e.kind)).to.deep.equal(['snapshot', 'stop', 'stop', 'return', 'finish']);
      expect(stopsOf(fx).sort()).to.deep.equal(['map.1.1', 'map.2.1']);
      expect(fx.filter((e) => e.kind === 'stop').map((e) => e.kind === 'stop' && e.nodeAddress)).to.deep.equal(['n1.addr:7071', 'n2.addr:7071']);
      expect(returnsOf(fx)).to.deep.equal([
        { suId: 'map', nodeId: 'n1', slots: 1 },
        { suId: 'map', nodeId: 'n2', slots: 1 },
        { suId: 'map', nodeId: 'n3', slots: 1 },
      ]);
      expect(h.progressOf('map')).to.deep.include({ name: 'map', total: 3, pending: 2, running: 0, succeeded: 0, failed: 1, retries: 1, reexecutions: 0 });
      expect(h.events('n1', ev('map.1.1', 'killed'))).to.deep.equal([]);
    });

    it('fails the job with the reason of a single failure when maxAttempts is 1 (signal, rejection)', () => {
      let h = new Harness();
      h.start(mockJob([mockTask({ maxAttempts: 1 })]));
      h.assign(asg('map', 'n1', 1));
      expect(finishOf(h.events('n1', ev('map.0.1', 'failed', { signal: 'SIGSEGV' })))?.message).to.equal(
        'task "map" instance 0 failed after 1 attempt: killed by signal SIGSEGV',
      );
      h = new Harness();
      h.start(mockJob([mockTask({ maxAttempts: 1 })]));
      h.assign(asg('map', 'n1', 1));
      expect(finishOf(h.events('n1', ev('map.0.1', 'rejected', { message: 'no such file: run' })))?.message).to.equal(
        'task "map" instance 0 failed after 1 attempt: rejected by the agent (no such file: run)',
      );
    });

    it('prefers a node the instance has not failed on, and gives slots on its failed node to other instances', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      h.assign(asg('map', 'n1', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed'));
      expect(planIds(fx)).to.deep.equal(['map.1.1']); // map.0 failed on n1: map.1 takes the slot
      fx = h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      expect(plansOf(fx)[0]?.workerId).to.equal('map.0.2');
      expect(fx.find((e) => e.kind === 'plan')).to.deep.include({ nodeId: 'n2' });
    });

    it('takes its failed node again in a one-node cluster after turning it down once', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1 })]));
      h.assign(asg('map', 'n1', 1));
      let fx = h.events('n1', ev('map.0.1', 'failed'));
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      expect(h.assign(asg('map', 'n1', 0))).to.deep.equal([]);
      fx = h.assign(asg('map', 'n1', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      expect(returnsOf(fx)).to.deep.equal([]);
    });

    it('plans on a slot returned and placed on the node again with the grant table that holds it, not the one before the return', () => {
      // The agent may get the plan before the grant table of the return: started on the older
      // table, whose room is the returned slot, the worker would be killed when that table arrives.
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1 })]));
      const first = h.am.assignments({ epoch: '1', seq: 1, full: false, assignments: [{ ...asg('map', 'n1', 1), grantSeq: 4 }] }, h.now);
      expect(plansOf(first)[0]).to.deep.include({ workerId: 'map.0.1', grantEpoch: '1', grantSeq: 4 });
      expect(returnsOf(h.events('n1', ev('map.0.1', 'failed')))).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(h.am.assignments({ epoch: '1', seq: 2, full: false, assignments: [asg('map', 'n1', 0)] }, h.now)).to.deep.equal([]);
      const again = h.am.assignments({ epoch: '1', seq: 3, full: false, assignments: [{ ...asg('map', 'n1', 1), grantSeq: 6 }] }, h.now);
      expect(plansOf(again)[0]).to.deep.include({ workerId: 'map.0.2', grantEpoch: '1', grantSeq: 6 });
    });

    it('retries an attempt whose node was lost elsewhere, without counting it, up to LOST_SLOTS_FREE times', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2, maxAttempts: 2 })]));
      h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
      let fx = h.assign(asg('map', 'n1', 0));
      expect(stopsOf(fx)).to.deep.equal(['map.0.1']);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 1, retries: 1 });
      // The killed event of the lost attempt changes nothing.
      expect(h.events('n1', ev('map.0.1', 'killed'))).to.deep.equal([]);
      // Lost again and again: the first LOST_SLOTS_FREE (3) are free, the fourth uses 1 of 2.
      let attempt = 2;
      for (const node of ['n3', 'n4', 'n5']) {
        fx = h.assign(asg('map', node, 1));
        expect(planIds(fx)).to.deep.equal([`map.0.${attempt}`]);
        fx = h.assign(asg('map', node, 0));
        expect(finishOf(fx)).to.equal(undefined);
        attempt++;
      }
      // The fifth loss uses the second: the job fails.
      fx = h.assign(asg('map', 'n6', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.5']);
      fx = h.am.assignments({ seq: ++h.seq, full: true, assignments: [asg('map', 'n2', 1)] }, h.now);
      expect(finishOf(fx)?.message).to.equal(
        'task "map" instance 0 failed after 2 attempts (plus 3 not counted: lost slots, re-runs off timing-out or cut-off nodes): node lost (n6)',
      );
    });

    it('still counts real failures after lost slots: an attempt that fails uses one of maxAttempts', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1, maxAttempts: 2 })]));
      h.assign(asg('map', 'n1', 1));
      h.assign(asg('map', 'n1', 0)); // lost: not counted
      let fx = h.assign(asg('map', 'n2', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.2']);
      fx = h.events('n2', ev('map.0.2', 'failed'));
      expect(finishOf(fx)).to.equal(undefined); // 1 of 2 used
      h.assign(asg('map', 'n2', 0));
      fx = h.assign(asg('map', 'n3', 1));
      expect(planIds(fx)).to.deep.equal(['map.0.3']);
      fx = h.events('n3', ev('map.0.3', 'failed'));
      expect(finishOf(fx)?.message).to.match(/^task "map" instance 0 failed after 2 attempts/);
    });

    it('accepts a late success of an attempt that was counted lost', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 1 })]));
      h.assign(asg('map', 'n1', 1));
      let fx = h.assign(asg('map', 'n1', 0));
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      fx = h.succeed('n1', 'map.0.1');
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: -1 }]);
      expect(finishOf(fx)).to.deep.include({ succeeded: true });
    });
  });

  describe('assignment sequence', () => {
    it('ignores a delta after a gap and heals with a full table', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      expect(planIds(h.assign(asg('map', 'n1', 1)))).to.deep.equal(['map.0.1']);
      expect(h.am.assignmentSeq).to.equal(1);
      // seq 2 was lost; seq 3 is ignored.
      expect(h.am.assignments({ seq: 3, full: false, assignments: [asg('map', 'n2', 1)] }, h.now)).to.deep.equal([]);
      expect(h.am.assignmentSeq).to.equal(1);
      // A repeat of seq 1 is ignored too.
      expect(h.am.assignments({ seq: 1, full: false, assignments: [asg('map', 'n1', 5)] }, h.now)).to.deep.equal([]);
      // The full table (from an UpdateRequests response) replaces everything.
      const fx = h.am.assignments({ seq: 3, full: true, assignments: [asg('map', 'n1', 1), asg('map', 'n2', 1)] }, h.now);
      expect(planIds(fx)).to.deep.equal(['map.1.1']);
      expect(h.am.assignmentSeq).to.equal(3);
      h.seq = 3;
      expect(h.assign(asg('map', 'n2', 1))).to.deep.equal([]);
      expect(h.am.assignmentSeq).to.equal(4);
    });

    it('starts from the assignments the app already holds', () => {
      const h = new Harness();
      h.seq = 7;
      const spec = mockJob([mockTask({ instances: 3 }), mockTask({ name: 'reduce', dependsOn: ['map'] })]);
      const fx = h.start(spec, [asg('map', 'n1', 2), asg('other', 'n1', 1), asg('reduce', 'n2', 1)]);
      expect(planIds(fx)).to.deep.equal(['map.0.1', 'map.1.1']);
      expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
      // reduce is not ready yet: its slot goes back; slots of SUs that are not tasks are left alone.
      expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n2', slots: 1 }]);
      expect(h.am.assignmentSeq).to.equal(7);
    });
  });

  describe('assignments across a master failover: (epoch, seq) order', () => {
    /** map x3, two running on n1 / n2 under master epoch 1 (assignment seq 5), one waiting for a slot. */
    function runningUnderEpoch1(): Harness {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 3 })]));
      h.am.assignments({ epoch: '1', seq: 1, full: true, assignments: [] }, h.now);
      const fx = h.am.assignments({ epoch: '1', seq: 5, full: true, assignments: [asg('map', 'n1', 1), asg('map', 'n2', 1)] }, h.now);
      expect(planIds(fx)).to.deep.equal(['map.0.1', 'map.1.1']);
      h.events('n1', ev('map.0.1', 'running'));
      h.events('n2', ev('map.1.1', 'running'));
      expect([h.am.assignmentEpoch, h.am.assignmentSeq]).to.deep.equal(['1', 5]);
      return h;
    }

    it("applies a newer master's full table although its seq is below the applied one; running instances stay", () => {
      const h = runningUnderEpoch1();
      expect(h.am.assignmentSeqFor('2')).to.equal(0);
      const fx = h.am.assignments({ epoch: '2', seq: 1, full: true, assignments: [asg('map', 'n1', 1), asg('map', 'n2', 1), asg('map', 'n3', 1)] }, h.now);
      // The new slot on n3 goes to the waiting instance; nothing is stopped, returned or asked again.
      expect(planIds(fx)).to.deep.equal(['map.2.1']);
      expect(stopsOf(fx)).to.deep.equal([]);
      expect(returnsOf(fx)).to.deep.equal([]);
      expect(deltasOf(fx)).to.deep.equal([]);
      expect([h.am.assignmentEpoch, h.am.assignmentSeq, h.am.assignmentSeqFor('2')]).to.deep.equal(['2', 1, 1]);
      expect(h.progressOf('map')).to.deep.include({ running: 3, retries: 0 });
    });

    it("counts a newer master's deltas from its own seq 1", () => {
      const h = runningUnderEpoch1();
      // seq 6 would follow the old master's numbering; seq 2 leaves a gap in the new one's.
      expect(h.am.assignments({ epoch: '2', seq: 6, full: false, assignments: [asg('map', 'n3', 1)] }, h.now)).to.deep.equal([]);
      expect(h.am.assignments({ epoch: '2', seq: 2, full: false, assignments: [asg('map', 'n3', 1)] }, h.now)).to.deep.equal([]);
      expect(h.am.assignmentEpoch).to.equal('1');
      const fx = h.am.assignments({ epoch: '2', seq: 1, full: false, assignments: [asg('map', 'n3', 1)] }, h.now);
      expect(planIds(fx)).to.deep.equal(['map.2.1']);
      expect([h.am.assignmentEpoch, h.am.assignmentSeq]).to.deep.equal(['2', 1]);
      // Then its own sequence goes on; a message without an epoch counts as the applied one's.
      expect(h.am.assignments({ seq: 2, full: false, assignments: [asg('map', 'n3', 1)] }, h.now)).to.deep.equal([]);
      expect(h.am.assignmentSeq).to.equal(2);
    });

    it('refuses a message from an older master (FAILED_PRECONDITION) and changes nothing', () => {
      const h = runningUnderEpoch1();
      h.am.assignments({ epoch: '3', seq: 1, full: true, assignments: [asg('map', 'n1', 1), asg('map', 'n2', 1)] }, h.now);
      expect(() => h.am.assignments({ epoch: '2', seq: 9, full: true, assignments: [] }, h.now)).to.throw(StaleEpochError);
      expect(() => h.am.assignments({ epoch: '1', seq: 6, full: false, assignments: [] }, h.now)).to.throw(FailedPreconditionError, /stale epoch/);
      expect(h.am.assignmentTable().map((a) => a.nodeId)).to.deep.equal(['n1', 'n2']);
      expect([h.am.assignmentEpoch, h.am.assignmentSeq]).to.deep.equal(['3', 1]);
    });

    it('ignores an older full table of the same master (it would take live slots away)', () => {
      const h = runningUnderEpoch1();
      expect(h.am.assignments({ epoch: '1', seq: 4, full: true, assignments: [] }, h.now)).to.deep.equal([]);
      expect(h.am.assignmentTable()).to.have.length(2);
      // The same seq again applies (a repeated answer).
      expect(stopsOf(h.am.assignments({ epoch: '1', seq: 5, full: true, assignments: [asg('map', 'n1', 1), asg('map', 'n2', 1)] }, h.now))).to.deep.equal([]);
    });

    it("applies a newer master's full table as it is: a slot missing from it is lost", () => {
      const h = runningUnderEpoch1();
      const fx = h.am.assignments({ epoch: '2', seq: 1, full: true, assignments: [asg('map', 'n1', 1)] }, h.now);
      expect(stopsOf(fx)).to.deep.equal(['map.1.1']);
      expect(h.progressOf('map')).to.deep.include({ running: 1, retries: 1 });
    });

    it('starts from held assignments with their epoch', () => {
      const h = new Harness();
      h.am.start(mockJob([mockTask({ instances: 1 })]), { epoch: '4', seq: 2, assignments: [asg('map', 'n1', 1)] }, h.now);
      expect([h.am.assignmentEpoch, h.am.assignmentSeq, h.am.assignmentSeqFor('4'), h.am.assignmentSeqFor('5')]).to.deep.equal(['4', 2, 2, 0]);
    });
  });

  describe('worker events', () => {
    it('are idempotent: duplicates and events of older attempts are ignored', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ instances: 2 })]));
      h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
      const first = h.events('n1', ev('map.0.1', 'running'), ev('map.0.1', 'running'), ev('map.0.1', 'succeeded'));
      expect(returnsOf(first)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(h.events('n1', ev('map.0.1', 'succeeded'))).to.deep.equal([]);
      expect(h.events('n1', ev('map.0.1', 'failed'))).to.deep.equal([]);
      expect(h.progressOf('map')).to.deep.include({ succeeded: 1, running: 1 });

      // map.1 fails on n2, is retried as attempt 2 on n3; late news of attempt 1 changes nothing.
      h.events('n2', ev('map.1.1', 'failed'));
      expect(h.events('n2', ev('map.1.1', 'failed'))).to.deep.equal([]);
      expect(planIds(h.assign(asg('map', 'n2', 0), asg('map', 'n3', 1)))).to.deep.equal(['map.1.2']);
      expect(h.events('n2', ev('map.1.1', 'succeeded'))).to.deep.equal([]);
      expect(h.events('n2', ev('map.1.1', 'running'))).to.deep.equal([]);
      expect(h.progressOf('map')).to.deep.include({ name: 'map', total: 2, pending: 0, running: 1, succeeded: 1, failed: 0, retries: 1, reexecutions: 0 });
      // Unknown workers are ignored.
      expect(h.events('n3', ev('nope.0.1', 'succeeded'), ev('map.9.1', 'succeeded'))).to.deep.equal([]);
      expect(finishOf(h.succeed('n3', 'map.1.2'))).to.deep.include({ succeeded: true });
    });

    it('finds the instance from the worker id when the event has no task fields', () => {
      const h = new Harness();
      h.start(mockJob([mockTask({ name: 'stage.1', instances: 1 })]));
      h.assign(asg('stage.1', 'n1', 1));
      const fx = h.events('n1', { ...ev('stage.1.0.1', 'succeeded'), task: '', instance: 0, attempt: 0 });
      expect(finishOf(fx)).to.deep.include({ succeeded: true });
    });
  });

  describe('progress', () => {
    it('counts pending, running, succeeded, failed and retries per task', () => {
      const h = new Harness();
      h.start(twoStage());
      expect(h.am.progress()).to.deep.equal([
        { name: 'map', total: 4, pending: 4, running: 0, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 },
        { name: 'reduce', total: 2, pending: 2, running: 0, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 },
      ]);
      h.assign(asg('map', 'n1', 3));
      h.succeed('n1', 'map.0.1');
      h.events('n1', ev('map.1.1', 'failed'));
      expect(h.progressOf('map')).to.deep.include({ name: 'map', total: 4, pending: 1, running: 2, succeeded: 1, failed: 0, retries: 1, reexecutions: 0 });
    });
  });
});
