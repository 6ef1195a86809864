import { expect } from 'chai';
import { AlreadyExistsError, InvalidArgumentError } from '@fuxi/common';
import {
  activeTestbedOf,
  checkJobTestbed,
  nextBoundary,
  resolveTestbed,
  testbedHosts,
  windowsOverlap,
  type ResolveContext,
  type Testbed,
  type TestbedNode,
} from '../testbeds.js';

const NOW = 1_000_000;
const HOUR = 3_600_000;

function node(id: string, over: Partial<TestbedNode> = {}): TestbedNode {
  return { id, labels: {}, healthy: true, cordoned: false, load: 0, ...over };
}

function ctx(over: Partial<ResolveContext> = {}): ResolveContext {
  return {
    nodes: [
      node('a1', { load: 0.5, labels: { gpu: 'yes' } }),
      node('a2', { load: 0.1 }),
      node('a3', { load: 0.1, labels: { gpu: 'yes' } }),
      node('a4', { load: 0.9 }),
    ],
    groups: new Set(['default', 'research']),
    testbeds: new Map(),
    nowMs: NOW,
    ...over,
  };
}

function tb(over: Partial<Testbed> = {}): Testbed {
  return { name: 'tb', group: 'research', selector: { hosts: ['a1'] }, hosts: ['a1'], createdMs: NOW - HOUR, ...over };
}

/** The InvalidArgumentError's field that `f` throws. */
function fieldOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof InvalidArgumentError) return e.field;
    throw e;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('testbeds: resolution', () => {
  it('resolves hosts by name, sorted and without repeats', () => {
    const t = resolveTestbed({ name: 'ml', group: 'research', selector: { hosts: ['a3', 'a1', 'a3'] } }, ctx());
    expect(t).to.deep.equal({ name: 'ml', group: 'research', selector: { hosts: ['a1', 'a3'] }, hosts: ['a1', 'a3'], createdMs: NOW });
  });

  it('resolves a label to every node carrying it', () => {
    expect(resolveTestbed({ name: 'ml', group: 'research', selector: { label: 'gpu=yes' } }, ctx()).hosts).to.deep.equal(['a1', 'a3']);
  });

  it('picks a count of healthy, uncordoned, least-loaded hosts (ties by id)', () => {
    const c = ctx({
      nodes: [
        node('a1', { load: 0 }),
        node('a2', { load: 0, healthy: false }),
        node('a3', { load: 0, cordoned: true }),
        node('a4', { load: 0.2 }),
        node('a5', { load: 0.1 }),
      ],
    });
    expect(resolveTestbed({ name: 'ml', group: 'research', selector: { count: 2 } }, c).hosts).to.deep.equal(['a1', 'a5']);
    // The same input, the same hosts.
    expect(resolveTestbed({ name: 'ml', group: 'research', selector: { count: 2 } }, c).hosts).to.deep.equal(['a1', 'a5']);
  });

  it('count skips hosts another testbed holds in an overlapping window', () => {
    const c = ctx({ testbeds: new Map([['tb', tb({ hosts: ['a2'] })]]) });
    expect(resolveTestbed({ name: 'ml', group: 'research', selector: { count: 1 } }, c).hosts).to.deep.equal(['a3']);
  });

  it('a retry of the same request returns the existing testbed; another definition is ALREADY_EXISTS', () => {
    const existing = tb({ name: 'ml', selector: { hosts: ['a1'] } });
    const c = ctx({ testbeds: new Map([['ml', existing]]) });
    expect(resolveTestbed({ name: 'ml', group: 'research', selector: { hosts: ['a1'] } }, c)).to.equal(existing);
    expect(() => resolveTestbed({ name: 'ml', group: 'research', selector: { hosts: ['a2'] } }, c)).to.throw(AlreadyExistsError, /already exists/);
  });
});

describe('testbeds: overlap and windows', () => {
  it('a host belongs to at most one testbed whose windows overlap', () => {
    const c = ctx({ testbeds: new Map([['tb', tb({ hosts: ['a1'] })]]) });
    expect(() => resolveTestbed({ name: 'ml', group: 'default', selector: { hosts: ['a1', 'a2'] } }, c)).to.throw(/hosts: a1 is in testbed "tb"/);
    expect(fieldOf(() => resolveTestbed({ name: 'ml', group: 'default', selector: { label: 'gpu=yes' } }, c))).to.equal('label');
  });

  it('windows that do not meet may share hosts', () => {
    const c = ctx({ testbeds: new Map([['tb', tb({ hosts: ['a1'], startMs: NOW + HOUR, endMs: NOW + 2 * HOUR })]]) });
    const before = resolveTestbed({ name: 'ml', group: 'default', selector: { hosts: ['a1'] }, endMs: NOW + HOUR }, c);
    expect(before.hosts).to.deep.equal(['a1']);
    const after = resolveTestbed({ name: 'ml', group: 'default', selector: { hosts: ['a1'] }, startMs: NOW + 2 * HOUR }, c);
    expect(after.hosts).to.deep.equal(['a1']);
    expect(() => resolveTestbed({ name: 'ml', group: 'default', selector: { hosts: ['a1'] }, startMs: NOW + HOUR / 2 }, c)).to.throw(/overlap/);
  });

  it('an expired testbed holds nothing', () => {
    const c = ctx({ testbeds: new Map([['tb', tb({ hosts: ['a1'], endMs: NOW - 1 })]]) });
    expect(resolveTestbed({ name: 'ml', group: 'default', selector: { hosts: ['a1'] } }, c).hosts).to.deep.equal(['a1']);
  });

  it('windowsOverlap treats no start as the creation time and no end as forever', () => {
    expect(windowsOverlap({ createdMs: 0 }, { createdMs: 5, startMs: 10 })).to.equal(true);
    expect(windowsOverlap({ createdMs: 0, endMs: 10 }, { createdMs: 5, startMs: 10 })).to.equal(false);
  });

  it('activeTestbedOf and testbedHosts heed the window', () => {
    const tbs = new Map([
      ['later', tb({ name: 'later', hosts: ['a1'], startMs: NOW + HOUR, endMs: NOW + 2 * HOUR })],
      ['now', tb({ name: 'now', hosts: ['a2', 'a3'] })],
    ]);
    expect(activeTestbedOf(tbs, 'a1', NOW)).to.equal(undefined);
    expect(activeTestbedOf(tbs, 'a1', NOW + HOUR)?.name).to.equal('later');
    expect(activeTestbedOf(tbs, 'a1', NOW + 2 * HOUR)).to.equal(undefined);
    expect(activeTestbedOf(tbs, 'a3', NOW)?.name).to.equal('now');
    expect(activeTestbedOf(tbs, 'a4', NOW)).to.equal(undefined);
    expect(testbedHosts(tbs, 'now', NOW)).to.deep.equal(['a2', 'a3']);
    expect(testbedHosts(tbs, 'later', NOW)).to.deep.equal([]);
    expect(testbedHosts(tbs, 'ghost', NOW)).to.deep.equal([]);
    expect(nextBoundary(tbs, NOW)).to.equal(NOW + HOUR);
    expect(nextBoundary(tbs, NOW + HOUR)).to.equal(NOW + 2 * HOUR);
    expect(nextBoundary(tbs, NOW + 2 * HOUR)).to.equal(undefined);
  });
});

describe('testbeds: validation errors name the field', () => {
  const ok = { name: 'ml', group: 'research', selector: { hosts: ['a1'] } };
  const cases: Array<[string, object, string, RegExp]> = [
    ['a bad name', { name: 'ML/1' }, 'name', /lowercase/],
    ['no group', { group: '' }, 'group', /required/],
    ['an unknown group', { group: 'nope' }, 'group', /not a configured quota group \(configured: default, research\)/],
    ['no selector', { selector: {} }, 'selector', /exactly one/],
    ['two selectors', { selector: { hosts: ['a1'], count: 1 } }, 'selector', /exactly one/],
    ['an unknown host', { selector: { hosts: ['a1', 'zz'] } }, 'hosts', /unknown node zz/],
    ['a label without =', { selector: { label: 'gpu' } }, 'label', /key=value/],
    ['a label no node carries', { selector: { label: 'gpu=no' } }, 'label', /no node carries gpu=no/],
    ['a count below 1', { selector: { count: -1 } }, 'count', />= 1/],
    ['a count above the free hosts', { selector: { count: 5 } }, 'count', /asks for 5 hosts; only 4/],
    ['an end in the past', { endMs: NOW - 1 }, 'end', /not in the future/],
    ['an end before the start', { startMs: NOW + 2 * HOUR, endMs: NOW + HOUR }, 'end', /after start/],
    ['a start over a year away', { startMs: NOW + 400 * 24 * HOUR }, 'start', /a year/],
    ['a bad start', { startMs: -5 }, 'start', /a time/],
  ];
  for (const [what, over, field, message] of cases) {
    it(`${what}: ${field}`, () => {
      expect(fieldOf(() => resolveTestbed({ ...ok, ...over }, ctx()))).to.equal(field);
      expect(() => resolveTestbed({ ...ok, ...over }, ctx())).to.throw(message);
    });
  }
});

describe('testbeds: a job that names one', () => {
  const tbs = new Map([
    ['ml', tb({ name: 'ml' })],
    ['old', tb({ name: 'old', endMs: NOW - 1 })],
    ['soon', tb({ name: 'soon', startMs: NOW + HOUR })],
  ]);
  it('must name an existing testbed of its quota group that is not over', () => {
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'research' }, NOW)).to.not.throw();
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'research', testbed: 'ml' }, NOW)).to.not.throw();
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'research', testbed: 'soon' }, NOW)).to.not.throw();
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'research', testbed: 'nope' }, NOW)).to.throw(/^testbed: no testbed "nope"/);
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'default', testbed: 'ml' }, NOW)).to.throw(
      /^testbed: "ml" is reserved for quota group "research", not "default"/,
    );
    expect(() => checkJobTestbed(tbs, { quotaGroup: 'research', testbed: 'old' }, NOW)).to.throw(/^testbed: "old" ended at/);
  });
});
