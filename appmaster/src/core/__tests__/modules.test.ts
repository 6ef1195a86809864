/**
 * Focused tests of the AM core's lower modules over a bare AmState: the outbox's order and return
 * numbering (am-state.ts), hold accounting (holds.ts) and outstanding requests (requests.ts). The
 * DagAppMaster tests cover how they combine.
 */
import { expect } from 'chai';
import { AmState, flush, newTask, parseWorkerId, pendingInstances, setInstanceState, workerIdOf, type InstanceState } from '../am-state.js';
import { effective, forgetIfEmpty, freeSlot, holdFor, returnSlots } from '../holds.js';
import { addRequest, cancelOutstanding, cancelSlack, consumeOutstanding, countedHolds, outstandingRequests, sizeRequests, takeBack } from '../requests.js';
import { mockJob, mockTask } from './factories.js';

function stateWith(...tasks: Parameters<typeof mockTask>[0][]): AmState {
  const st = new AmState();
  const spec = mockJob(tasks.map((t) => mockTask(t)));
  st.spec = spec;
  spec.tasks.forEach((ts, i) => st.tasks.set(ts.name, newTask(spec, ts, i)));
  return st;
}

describe('AM core modules', () => {
  describe('am-state', () => {
    it('parses worker ids back, task names with dots included', () => {
      expect(parseWorkerId(workerIdOf('a.b', 3, 2))).to.deep.equal({ task: 'a.b', instance: 3, attempt: 2 });
      expect(parseWorkerId('nope')).to.equal(undefined);
    });

    it('flushes in the AmEffect order, numbers return effects and empties the outbox', () => {
      const st = stateWith({ name: 'map' });
      st.nodeAddresses.set('n1', 'n1:7071');
      st.out.finish = { succeeded: true, message: 'ok' };
      st.out.plans.set('n1', []);
      st.out.deltas.set('x', { suId: 'map', location: '', delta: 1 });
      st.out.returns.set('y', { suId: 'map', nodeId: 'n1', slots: 1 });
      st.out.stops.set('n1', ['map.0.1']);
      st.out.entries.push('{}');
      expect(flush(st).map((e) => e.kind)).to.deep.equal(['snapshot', 'stop', 'return', 'request', 'plan', 'finish']);
      expect(st.returnEffects).to.equal(1);
      expect(flush(st)).to.deep.equal([]);
    });

    it('keeps per-state instance counts and finds pending instances in index order from its cursor', () => {
      const st = stateWith({ name: 'map', instances: 50 });
      const task = st.tasks.get('map')!;
      const states: InstanceState[] = ['waiting', 'pending', 'running', 'succeeded', 'failed'];
      // A fixed pseudo-random walk of state changes (LCG), checked against a recount at every step.
      let seed = 7;
      const next = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      for (let step = 0; step < 2000; step++) {
        const inst = task.instances[next(50)]!;
        setInstanceState(task, inst, states[next(states.length)]!);
        if (step % 7 === 0) {
          // A partial walk (as placement does when slots run out) moves the cursor on.
          let left = next(5);
          for (const _ of pendingInstances(task, () => left-- > 0)) void _;
        }
        const recount = Object.fromEntries(states.map((s) => [s, task.instances.filter((i) => i.state === s).length]));
        expect(task.counts).to.deep.equal(recount);
        expect([...pendingInstances(task)].map((i) => i.index)).to.deep.equal(task.instances.filter((i) => i.state === 'pending').map((i) => i.index));
      }
    });
  });

  describe('holds', () => {
    it('counts returning slots as not ours, tags returns with the next return effect, forgets empty holds', () => {
      const st = stateWith({ name: 'map' });
      const task = st.tasks.get('map')!;
      const h = holdFor(task, 'n1');
      h.held = 3;
      h.used = 1;
      returnSlots(st, task, h, 2, 500);
      expect(effective(h)).to.equal(1);
      expect(h.returning).to.deep.equal([{ n: 2, at: 500, id: 1 }]);
      expect([...st.out.returns.values()]).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 2 }]);
      h.held = 0;
      h.returning = [];
      freeSlot(task, 'n1');
      expect(task.holds.has('n1')).to.equal(false);
      forgetIfEmpty(task, holdFor(task, 'n2'));
      expect(task.holds.size).to.equal(0);
    });
  });

  describe('requests', () => {
    it('spreads the first request over locality hints, later ones anywhere, and sends the unit once', () => {
      const st = stateWith({ name: 'map', instances: 4, locality: { nodes: ['n1'], racks: ['r1'] } });
      const task = st.tasks.get('map')!;
      sizeRequests(st, task, 3);
      expect(outstandingRequests(st)).to.deep.equal([
        { suId: 'map', location: 'node:n1', count: 2 },
        { suId: 'map', location: 'rack:r1', count: 1 },
      ]);
      sizeRequests(st, task, 4);
      expect(st.out.units.map((u) => u.suId)).to.deep.equal(['map']);
      expect([...st.out.deltas.values()].map((d) => [d.location, d.delta])).to.deep.equal([
        ['node:n1', 2],
        ['rack:r1', 1],
        ['', 1],
      ]);
    });

    it('asks for no more than the instances less the slots held outside timing-out nodes', () => {
      const st = stateWith({ name: 'map', instances: 5 });
      const task = st.tasks.get('map')!;
      holdFor(task, 'n1').held = 2;
      const late = holdFor(task, 'n2');
      late.held = 2;
      st.timingOut.set('n2', 0);
      const back = holdFor(task, 'n3');
      back.held = 2;
      returnSlots(st, task, back, 1, 0); // returning: no longer ours
      expect(countedHolds(st, task)).to.equal(3);
      sizeRequests(st, task, 4);
      expect(outstandingRequests(st)).to.deep.equal([{ suId: 'map', location: '', count: 2 }]);
      st.timingOut.delete('n2');
      sizeRequests(st, task, 4);
      expect(outstandingRequests(st)).to.deep.equal([]);
    });

    it('takes a refused request back: its deltas undone, its units to be sent again', () => {
      const st = stateWith({ name: 'map', instances: 5 });
      const task = st.tasks.get('map')!;
      sizeRequests(st, task, 3);
      const { units, deltas } = { units: st.out.units, deltas: [...st.out.deltas.values()] };
      takeBack(st, units, deltas);
      expect(outstandingRequests(st)).to.deep.equal([]);
      expect(task.unitSent).to.equal(false);
      addRequest(st, task, '', 2);
      takeBack(st, [], [{ suId: 'map', location: '', delta: -1 }]);
      expect(outstandingRequests(st)).to.deep.equal([{ suId: 'map', location: '', count: 3 }]);
    });

    it('cancels a surplus once it is more than an eighth of the need, then all of it; below 8 each one at once', () => {
      const st = stateWith({ name: 'map', instances: 1000 });
      const task = st.tasks.get('map')!;
      sizeRequests(st, task, 1000);
      expect(cancelSlack(1000)).to.equal(125);
      // Each launch on a reused slot needs one fewer: nothing goes to the master while the surplus is small.
      const sent: number[] = [];
      for (let need = 999; need >= 0; need--) {
        st.out.deltas.clear();
        sizeRequests(st, task, need);
        const d = st.out.deltas.get('map\u0000')?.delta ?? 0;
        if (d !== 0) sent.push(d);
        const outstanding = task.outstanding.get('') ?? 0;
        expect(outstanding - need).to.be.within(0, cancelSlack(need));
      }
      expect(task.outstanding.size).to.equal(0);
      expect(sent.length).to.be.within(40, 60);
      expect(sent.slice(-7)).to.deep.equal([-1, -1, -1, -1, -1, -1, -1]);
    });

    it('consumes a placement on the node first, then anywhere; cancels anywhere first, then racks, then nodes', () => {
      const st = stateWith({ name: 'map' });
      const task = st.tasks.get('map')!;
      addRequest(st, task, 'node:n2', 1);
      addRequest(st, task, 'rack:r1', 1);
      addRequest(st, task, '', 2);
      consumeOutstanding(task, 'n2', 2);
      expect([...task.outstanding]).to.deep.equal([
        ['rack:r1', 1],
        ['', 1],
      ]);
      cancelOutstanding(st, task, 1);
      expect([...task.outstanding]).to.deep.equal([['rack:r1', 1]]);
      expect(st.out.deltas.get('map\u0000')?.delta).to.equal(1);
    });
  });
});
