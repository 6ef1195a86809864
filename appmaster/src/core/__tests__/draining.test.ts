/**
 * Nodes an operator drains (the master's graph, `draining`): the AM plans nothing new there and
 * gives back the free slots it holds there; running workers are left alone; the end of the drain
 * makes the node usable again.
 */
import { expect } from 'chai';
import type { AmEffect } from '../types.js';
import { asg, Harness, mockJob, mockTask, planIds, returnsOf, stopsOf } from './factories.js';

const planNodes = (effects: AmEffect[]): string[] => effects.flatMap((e) => (e.kind === 'plan' ? [e.nodeId] : []));

describe('DagAppMaster: nodes being drained', () => {
  it('plans nothing new on a draining node and returns its free slots; running workers stay', () => {
    const h = new Harness({ nodeId: 'n0', returnSettleMs: 1e12 });
    h.start(mockJob([mockTask({ name: 'map', instances: 6 })]));
    // Two instances run on n1, two on n2; two wait for slots.
    expect(planIds(h.assign(asg('map', 'n1', 2), asg('map', 'n2', 2)))).to.have.length(4);
    let fx = h.am.drainingChanged(['n1'], h.now);
    expect(stopsOf(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([]);
    // An instance on n1 finishes: its slot is not reused for a waiting instance, it goes back.
    fx = h.succeed('n1', 'map.0.1');
    expect(planNodes(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    // On n2 a finished instance's slot takes the next one as before.
    fx = h.succeed('n2', 'map.2.1');
    expect(planNodes(fx)).to.deep.equal(['n2']);
    // A slot placed on n1 anyway is given back unused.
    fx = h.assign(asg('map', 'n1', 3));
    expect(planNodes(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    // The same set again changes nothing; the drain's end makes n1 usable again.
    expect(h.am.drainingChanged(['n1'], h.now)).to.deep.equal([]);
    h.am.drainingChanged([], h.now);
    fx = h.assign(asg('map', 'n1', 4));
    expect(planNodes(fx)).to.deep.equal(['n1']);
  });
});
