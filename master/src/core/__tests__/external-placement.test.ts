import { expect } from 'chai';
import { res, type Resource } from '@fuxi/common';
import { checkPlacements, type ExternalPlacement, type PlacementCheckView } from '../external-placement.js';

interface MockHost {
  free: Resource;
  schedulable?: boolean;
  inScope?: boolean;
}
interface MockUnit {
  scheduler?: string;
  resource?: Resource;
  outstanding: number;
  gang?: number;
}

/** A view over plain objects: hosts by id, units by `app/unit`, registration epoch '7'. */
function mockView(hosts: Record<string, MockHost>, units: Record<string, MockUnit>, currentEpoch: string | null = '7'): PlacementCheckView {
  return {
    currentEpoch: currentEpoch ?? undefined,
    inScope: (id) => hosts[id]?.inScope ?? hosts[id] !== undefined,
    host: (id) => {
      const h = hosts[id];
      return h && { free: h.free, schedulable: h.schedulable ?? true };
    },
    unit: (appId, unit) => {
      const u = units[`${appId}/${unit}`];
      return u && { scheduler: 'scheduler' in u ? u.scheduler : 'ffd', resource: u.resource ?? res(1000, 1024), outstanding: u.outstanding, gang: u.gang ?? 1 };
    },
  };
}

const p = (nodeId: string, count: number, unit = 'map', appId = 'a1'): ExternalPlacement => ({ appId, unit, nodeId, count });
const call = (placements: ExternalPlacement[], epoch = '7') => ({ name: 'ffd', epoch, placements });
const codes = (r: ReturnType<typeof checkPlacements>) => r.rejected.map((x) => `${x.index}:${x.code}`);

describe('external placement checks', () => {
  const hosts = { h1: { free: res(4000, 4096) }, h2: { free: res(2000, 2048) } };

  it('accepts placements that fit, within the request and the scope', () => {
    const r = checkPlacements(mockView(hosts, { 'a1/map': { outstanding: 6 } }), call([p('h1', 4), p('h2', 2)]));
    expect(r.accepted).to.deep.equal([p('h1', 4), p('h2', 2)]);
    expect(r.rejected).to.deep.equal([]);
  });

  it('rejects a placement that over-commits a host, counting the placements before it in the call', () => {
    const r = checkPlacements(mockView(hosts, { 'a1/map': { outstanding: 9 } }), call([p('h1', 3), p('h1', 2), p('h2', 2)]));
    expect(codes(r)).to.deep.equal(['1:OVER_CAPACITY']);
    expect(r.rejected[0]?.message).to.equal('host h1 has 1000m CPU and 1024 MiB free; 2 slots of a1/map need 2000m and 2048 MiB');
    expect(r.accepted).to.deep.equal([p('h1', 3), p('h2', 2)]);
  });

  it('rejects a host outside the scope, an unschedulable or unknown host', () => {
    const view = mockView(
      { ...hosts, h3: { free: res(8000, 8192), inScope: false }, h4: { free: res(8000, 8192), schedulable: false } },
      { 'a1/map': { outstanding: 9 } },
    );
    const r = checkPlacements(view, call([p('h3', 1), p('h4', 1), p('h9', 1)]));
    expect(codes(r)).to.deep.equal(['0:OUT_OF_SCOPE', '1:HOST_UNSCHEDULABLE', '2:OUT_OF_SCOPE']);
    expect(r.rejected[0]?.message).to.equal('host h3 is outside the scope of ffd');
    expect(r.accepted).to.deep.equal([]);
  });

  it("rejects more slots than the unit asks for, unknown units and other schedulers' jobs", () => {
    const view = mockView(hosts, {
      'a1/map': { outstanding: 2 },
      'a2/map': { outstanding: 1, scheduler: 'other' },
      'a3/map': { outstanding: 1, scheduler: undefined },
    });
    const r = checkPlacements(view, call([p('h1', 2), p('h2', 1), p('h1', 1, 'reduce'), p('h1', 1, 'map', 'a2'), p('h1', 1, 'map', 'a3')]));
    expect(codes(r)).to.deep.equal(['1:OVER_REQUEST', '2:UNKNOWN_UNIT', '3:NOT_ITS_JOB', '4:NOT_ITS_JOB']);
    expect(r.rejected[3]?.message).to.equal('job a3 is scheduled by the built-in scheduler, not ffd');
  });

  it('rejects malformed placements with INVALID', () => {
    const r = checkPlacements(mockView(hosts, { 'a1/map': { outstanding: 2 } }), call([p('h1', 0), p('', 1), p('h1', 1.5)]));
    expect(codes(r)).to.deep.equal(['0:INVALID', '1:INVALID', '2:INVALID']);
  });

  it('fences a call with an older registration epoch, and rejects every placement when the name is not registered', () => {
    const units = { 'a1/map': { outstanding: 2 } };
    const fenced = checkPlacements(mockView(hosts, units, '8'), call([p('h1', 1), p('h2', 1)]));
    expect(codes(fenced)).to.deep.equal(['0:FENCED', '1:FENCED']);
    expect(fenced.rejected[0]?.message).to.equal('registration epoch 7 of ffd is fenced by a newer registration (epoch 8)');
    const gone = checkPlacements(mockView(hosts, units, null), call([p('h1', 1)]));
    expect(codes(gone)).to.deep.equal(['0:NOT_REGISTERED']);
  });

  it('accepts a whole gang, rejects a partial one whole and gives its room to the others', () => {
    const units = { 'a1/map': { outstanding: 4, gang: 4 }, 'a2/map': { outstanding: 4 } };
    const whole = checkPlacements(mockView(hosts, units), call([p('h1', 2), p('h2', 2)]));
    expect(whole.rejected).to.deep.equal([]);
    // The gang's second placement does not fit: neither is granted, and a2 gets h1's room.
    const partial = checkPlacements(mockView(hosts, units), call([p('h1', 2), p('h2', 3), p('h1', 4, 'map', 'a2')]));
    expect(codes(partial)).to.deep.equal(['0:PARTIAL_GANG', '1:PARTIAL_GANG']);
    expect(partial.rejected[0]?.message).to.equal('a1/map is a gang of 4: all 4 slots at once or none, this call places 2');
    expect(partial.accepted).to.deep.equal([p('h1', 4, 'map', 'a2')]);
  });

  it('takes the slots beyond a gang one placement at a time once the gang is granted (gang 1)', () => {
    const r = checkPlacements(mockView(hosts, { 'a1/map': { outstanding: 3, gang: 1 } }), call([p('h1', 1)]));
    expect(r.accepted).to.have.length(1);
  });
});
