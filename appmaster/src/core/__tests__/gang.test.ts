import { expect } from 'chai';
import { asg, deltasOf, ev, Harness, mockJob, mockTask, planIds, returnsOf } from './factories.js';

describe('DagAppMaster: gang tasks', () => {
  it('plans nothing of a gang until it holds slots for all of it, then plans all at once', () => {
    const h = new Harness();
    let fx = h.start(mockJob([mockTask({ instances: 3, minInstances: 3 })]));
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 3 }]);
    fx = h.assign(asg('map', 'n1', 1));
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([]); // kept, not given back
    fx = h.assign(asg('map', 'n2', 1));
    expect(planIds(fx)).to.deep.equal([]);
    fx = h.assign(asg('map', 'n3', 1));
    expect(planIds(fx)).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1']);
    expect(h.progressOf('map')).to.deep.include({ pending: 0, running: 3 });
  });

  it('with minInstances k below instances, waits for k slots, then takes the rest one by one', () => {
    const h = new Harness();
    h.start(mockJob([mockTask({ instances: 4, minInstances: 2 })]));
    expect(planIds(h.assign(asg('map', 'n1', 1)))).to.deep.equal([]);
    expect(planIds(h.assign(asg('map', 'n2', 1)))).to.deep.equal(['map.0.1', 'map.1.1']);
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.2.1']);
  });

  it('retries a failed gang instance alone while the others keep running', () => {
    const h = new Harness();
    h.start(mockJob([mockTask({ instances: 3, minInstances: 3, maxAttempts: 3 })]));
    h.assign(asg('map', 'n1', 3));
    let fx = h.events('n1', ev('map.1.1', 'failed'));
    expect(h.progressOf('map')).to.deep.include({ running: 2 });
    // No whole-gang restart: the failed instance alone gets a new attempt on a slot elsewhere.
    fx = h.assign(asg('map', 'n1', 3), asg('map', 'n2', 1));
    expect(planIds(fx)).to.deep.equal(['map.1.2']);
    expect(h.progressOf('map')).to.deep.include({ running: 3 });
  });

  it('a task without a gang starts instances as slots come (unchanged)', () => {
    const h = new Harness();
    h.start(mockJob([mockTask({ instances: 3 })]));
    expect(planIds(h.assign(asg('map', 'n1', 1)))).to.deep.equal(['map.0.1']);
  });
});
