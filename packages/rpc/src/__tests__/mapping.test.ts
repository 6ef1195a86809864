import { expect } from 'chai';
import { DEFAULT_SHARED_AM_RESOURCE, InvalidArgumentError, normalizeJobSpec, validateJobSpec, type JobSpec } from '@fuxi/common';
import { loadFuxiProto, type SubmitJobRequest, type SubmitJobRequest__Output } from '@fuxi/proto';
import { jobSpecFromProto, jobSpecToProto } from '../mapping.js';

/** Encodes and decodes through the real wire format (the SubmitJob request). */
function overTheWire(req: SubmitJobRequest): SubmitJobRequest__Output {
  const def = loadFuxiProto().MasterService.service.SubmitJob;
  return def.requestDeserialize(def.requestSerialize(req));
}

const spec: JobSpec = normalizeJobSpec({
  id: 'wc-1',
  name: 'wordcount',
  quotaGroup: 'batch',
  priority: 7,
  env: { A: '1', B: 'two' },
  am: { cpu: 0.2, memory: 300 },
  tasks: [
    {
      name: 'map',
      instances: 20,
      resources: { cpu: 0.5, memory: '512Mi' },
      command: ['node', 'map.mjs', '${instance}'],
      env: { K: 'v' },
      cwd: '/work',
      maxAttempts: 5,
      locality: { nodes: ['n1', 'n2'], racks: ['r1'] },
      priority: -1,
    },
    { name: 'reduce', resources: { cpu: 1, memory: '1Gi' }, command: 'node reduce.mjs', dependsOn: ['map'] },
  ],
});

describe('job spec <-> proto mapping', () => {
  it('round-trips a spec through the wire format', () => {
    const decoded = overTheWire({ spec: jobSpecToProto(spec) });
    expect(decoded.spec?.amResource).to.deep.equal({ cpuMilli: 200, memoryMb: 300 });
    expect(decoded.spec?.tasks[0]?.maxAttempts).to.equal(5);
    expect(jobSpecFromProto(decoded.spec!)).to.deep.equal(spec);
  });

  it('round-trips without the wire too', () => {
    expect(jobSpecFromProto(jobSpecToProto(spec))).to.deep.equal(spec);
  });

  it('turns missing submessages into zero values', () => {
    const decoded = overTheWire({ spec: { name: 'x', tasks: [{ name: 't', instances: 1 }] } });
    const domain = jobSpecFromProto(decoded.spec!);
    expect(domain).to.deep.equal({
      jobId: '',
      name: 'x',
      quotaGroup: '',
      priority: 0,
      env: {},
      amResource: { cpuMilli: 0, memoryMb: 0 },
      amMode: '',
      tasks: [
        {
          name: 't',
          instances: 1,
          resource: { cpuMilli: 0, memoryMb: 0 },
          command: { argv: [], env: {}, cwd: '' },
          maxAttempts: 0,
          dependsOn: [],
          locality: { nodes: [], racks: [] },
          priority: 0,
        },
      ],
      onAgentTimeout: '',
      rerunAfterMs: 0,
    });
    // ...which validateJobSpec reports (resources) or fills in (quota group, AM, maxAttempts).
    try {
      validateJobSpec(domain);
      expect.fail('expected an error');
    } catch (e) {
      expect(e).to.be.instanceOf(InvalidArgumentError);
      expect((e as Error).message).to.equal('tasks[0].resources.cpu: must be greater than 0, got 0');
    }
    const fixed = validateJobSpec({
      ...domain,
      tasks: domain.tasks.map((t) => ({ ...t, resource: { cpuMilli: 1, memoryMb: 1 }, command: { ...t.command, argv: ['true'] } })),
    });
    expect(fixed.quotaGroup).to.equal('default');
    expect(fixed.amResource).to.deep.equal(DEFAULT_SHARED_AM_RESOURCE);
    expect(fixed.amMode).to.equal('shared');
    expect(fixed.tasks[0]?.maxAttempts).to.equal(3);
    expect([fixed.onAgentTimeout, fixed.rerunAfterMs]).to.deep.equal(['rerun', 30_000]);
  });

  it('maps the agent-timeout policy both ways; an explicit policy keeps an explicit 0', () => {
    const wait = { ...spec, onAgentTimeout: 'wait' as const, rerunAfterMs: 5000 };
    const decoded = overTheWire({ spec: jobSpecToProto(wait) });
    expect([decoded.spec?.onAgentTimeout, decoded.spec?.rerunAfterMs]).to.deep.equal(['wait', 5000]);
    expect(jobSpecFromProto(decoded.spec!)).to.deep.equal(wait);
    const now = validateJobSpec(jobSpecFromProto(overTheWire({ spec: jobSpecToProto({ ...spec, rerunAfterMs: 0 }) }).spec!));
    expect([now.onAgentTimeout, now.rerunAfterMs]).to.deep.equal(['rerun', 0]);
    const bad = jobSpecFromProto(overTheWire({ spec: { ...jobSpecToProto(spec), onAgentTimeout: 'sometimes' } }).spec!);
    expect(() => validateJobSpec(bad)).to.throw(InvalidArgumentError, 'onAgentTimeout: must be "wait" or "rerun", got "sometimes"');
  });

  it('maps the AM mode both ways', () => {
    const dedicated = { ...spec, amMode: 'dedicated' as const };
    const decoded = overTheWire({ spec: jobSpecToProto(dedicated) });
    expect(decoded.spec?.amMode).to.equal('dedicated');
    expect(jobSpecFromProto(decoded.spec!)).to.deep.equal(dedicated);
  });

  it('maps the network both ways, unset as unset', () => {
    const independent = { ...spec, network: 'independent' as const };
    const decoded = overTheWire({ spec: jobSpecToProto(independent) });
    expect(decoded.spec?.network).to.equal('independent');
    expect(jobSpecFromProto(decoded.spec!)).to.deep.equal(independent);
    const unset = jobSpecFromProto(overTheWire({ spec: jobSpecToProto(spec) }).spec!);
    expect(unset).to.not.have.property('network');
    const bad = jobSpecFromProto(overTheWire({ spec: { ...jobSpecToProto(spec), network: 'meshed' } }).spec!);
    expect(() => validateJobSpec(bad)).to.throw(InvalidArgumentError, 'network: must be "connected"');
  });

  it('maps an empty proto spec', () => {
    const domain = jobSpecFromProto({});
    expect(domain.tasks).to.deep.equal([]);
    expect(domain.amResource).to.deep.equal({ cpuMilli: 0, memoryMb: 0 });
  });
});
