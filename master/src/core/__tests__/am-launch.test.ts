import { expect } from 'chai';
import { Harness, mockSpec } from './core-factories.js';

describe('master core: an AM launch that never reached its agent', () => {
  it('is restarted once the agent has reported for AM_LAUNCH_GRACE_MS without the AM process', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    h.submit(mockSpec({ id: 'lost-launch' }));
    expect(h.core.getJob('lost-launch').amAttempt).to.equal(1);
    // The agent beats, listing the AM process: nothing happens however long it takes to register.
    const listed = { amWorkers: [{ appId: 'lost-launch', amAttempt: 1, state: 'running' as const, exitCode: 0, signal: '', message: '' }] };
    for (let t = 0; t < 15; t++) {
      h.advance(1000);
      h.heartbeat('n1', listed);
      h.tick();
    }
    expect(h.core.getJob('lost-launch').amAttempt).to.equal(1);
    // Without it (the launch never arrived), the next beat past the grace restarts the AM.
    h.heartbeat('n1', { amWorkers: [] });
    h.tick();
    expect(h.core.getJob('lost-launch').amAttempt).to.equal(2);
  });
});
