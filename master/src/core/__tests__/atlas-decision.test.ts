import { expect } from 'chai';
import { decide } from '../atlas-decision.js';

const config = { failurePenalty: 60, reschedulePenalty: 5, killPenalty: 90, slotSecondCost: 1 };

describe('ATLAS+ decision', () => {
  it('proceeds when a failure is unlikely', () => {
    expect(decide({ pHere: 0.02, pElsewhere: 0.01, totalS: 100, elapsedS: 0 }, config).action).to.equal('proceed');
  });

  it('reschedules a likely failure when another host is much safer', () => {
    const d = decide({ pHere: 0.6, pElsewhere: 0.05, totalS: 100, elapsedS: 0 }, config);
    expect(d.action).to.equal('reschedule');
    expect(d.costs.proceed).to.be.closeTo(0.6 * 160, 1e-9);
    expect(d.costs.reschedule).to.be.closeTo(5 + 0.05 * 160, 1e-9);
  });

  it('proceeds with an attempt far along rather than throw its work away', () => {
    expect(decide({ pHere: 0.3, pElsewhere: 0.05, totalS: 100, elapsedS: 90 }, config).action).to.equal('proceed');
  });

  it('kills early an attempt nearly sure to fail everywhere with much left to run', () => {
    const d = decide({ pHere: 0.95, pElsewhere: 0.9, totalS: 1000, elapsedS: 10 }, config);
    expect(d.action).to.equal('kill');
  });

  it('never kills an attempt that has not started', () => {
    expect(decide({ pHere: 0.99, pElsewhere: undefined, totalS: 1000, elapsedS: 0 }, config).action).to.equal('proceed');
    expect(decide({ pHere: 0.99, pElsewhere: 0.98, totalS: 1000, elapsedS: 0 }, config).action).to.equal('reschedule');
  });

  it('proceeds when there is nowhere else to go and a failure is not near certain', () => {
    expect(decide({ pHere: 0.5, pElsewhere: undefined, totalS: 100, elapsedS: 0 }, config).action).to.equal('proceed');
  });

  it('never acts on a job with failurePrediction off', () => {
    const d = decide({ pHere: 0.99, pElsewhere: 0.01, totalS: 1000, elapsedS: 0, predictionOff: true }, config);
    expect(d.action).to.equal('proceed');
    expect(d.costs.reschedule).to.be.lessThan(d.costs.proceed);
  });
});
