import { expect } from 'chai';
import { InvalidArgumentError } from '../errors.js';
import {
  DEFAULT_AM_RESOURCE,
  DEFAULT_SHARED_AM_RESOURCE,
  gangSize,
  isConnectedJob,
  normalizeJobSpec,
  parseJobSpecText,
  taskPriority,
  topoOrder,
  validateJobSpec,
  predictionOn,
  type JobSpec,
  type TaskSpec,
} from '../job-spec.js';
import { dimensionsOver, min, res } from '../resource.js';

/** Runs `fn`, expects an InvalidArgumentError, returns it. */
function invalid(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(InvalidArgumentError);
    return e as InvalidArgumentError;
  }
  expect.fail('expected an InvalidArgumentError');
}

function userJob(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'wordcount',
    tasks: [
      { name: 'map', instances: 2, resources: { cpu: 0.5, memory: '512Mi' }, command: ['node', 'map.mjs', '${instance}'] },
      { name: 'reduce', instances: 1, resources: { cpu: '250m', memory: 256 }, command: 'node reduce.mjs', dependsOn: ['map'] },
    ],
    ...over,
  };
}

function userTask(i: number, over: Record<string, unknown>): Record<string, unknown> {
  const job = userJob();
  const tasks = job.tasks as Record<string, unknown>[];
  tasks[i] = { ...tasks[i], ...over };
  return job;
}

function domainTask(name: string, dependsOn: string[] = [], over: Partial<TaskSpec> = {}): TaskSpec {
  return {
    name,
    instances: 1,
    resource: { cpuMilli: 100, memoryMb: 64 },
    command: { argv: ['true'], env: {}, cwd: '' },
    maxAttempts: 3,
    dependsOn,
    locality: { nodes: [], racks: [] },
    priority: 0,
    ...over,
  };
}

function domainJob(tasks: TaskSpec[], over: Partial<JobSpec> = {}): JobSpec {
  return {
    jobId: '',
    name: 'j',
    quotaGroup: 'default',
    priority: 0,
    env: {},
    amResource: { ...DEFAULT_SHARED_AM_RESOURCE },
    amMode: 'shared',
    tasks,
    onAgentTimeout: 'rerun',
    rerunAfterMs: 30_000,
    ...over,
  };
}

describe('job spec', () => {
  describe('parseJobSpecText', () => {
    it('parses YAML', () => {
      const v = parseJobSpecText('name: a\ntasks:\n  - name: t\n    resources: { cpu: 500m, memory: 1Gi }\n');
      expect(v).to.deep.equal({ name: 'a', tasks: [{ name: 't', resources: { cpu: '500m', memory: '1Gi' } }] });
    });

    it('parses JSON', () => {
      expect(parseJobSpecText('{"name": "a", "tasks": []}')).to.deep.equal({ name: 'a', tasks: [] });
    });

    it('reports malformed YAML with line, column and source', () => {
      const e = invalid(() => parseJobSpecText('name: a\ntasks: [1, 2\nfoo: 3\n', 'job.yaml'));
      expect(e.field).to.equal('');
      expect(e.message).to.match(/^job\.yaml: invalid YAML at line 3, column 1: /);
      expect(e.message).to.not.include('\n');
    });

    it('reports malformed JSON with line and column', () => {
      const e = invalid(() => parseJobSpecText('{\n  "name": "a",,\n  "tasks": []\n}', 'job.json'));
      expect(e.message).to.match(/^job\.json: invalid YAML at line 2, column 15: /);
    });

    it('rejects duplicate keys and multiple documents', () => {
      expect(invalid(() => parseJobSpecText('name: a\nname: b\n')).message).to.match(/invalid YAML at line 2, column 1: duplicate key/);
      expect(invalid(() => parseJobSpecText('name: a\n---\nname: b\n')).message).to.match(/single document/);
    });

    it('returns null for an empty document, which normalize rejects', () => {
      expect(parseJobSpecText('')).to.equal(null);
      expect(invalid(() => normalizeJobSpec(null)).message).to.match(/must be a mapping/);
    });
  });

  describe('normalizeJobSpec', () => {
    it('converts the user format and applies defaults', () => {
      const spec = normalizeJobSpec(userJob());
      expect(spec).to.deep.equal({
        jobId: '',
        name: 'wordcount',
        quotaGroup: 'default',
        priority: 0,
        env: {},
        amResource: { cpuMilli: 20, memoryMb: 32 },
        amMode: 'shared',
        tasks: [
          {
            name: 'map',
            instances: 2,
            resource: { cpuMilli: 500, memoryMb: 512 },
            command: { argv: ['node', 'map.mjs', '${instance}'], env: {}, cwd: '' },
            maxAttempts: 3,
            dependsOn: [],
            locality: { nodes: [], racks: [] },
            priority: 0,
          },
          {
            name: 'reduce',
            instances: 1,
            resource: { cpuMilli: 250, memoryMb: 256 },
            command: { argv: ['/bin/sh', '-c', 'node reduce.mjs'], env: {}, cwd: '' },
            maxAttempts: 3,
            dependsOn: ['map'],
            locality: { nodes: [], racks: [] },
            priority: 0,
          },
        ],
        onAgentTimeout: 'rerun',
        rerunAfterMs: 30_000,
      });
    });

    it('keeps every given field', () => {
      const spec = normalizeJobSpec({
        id: 'wc-2026.01_a',
        name: 'wc',
        quotaGroup: 'batch',
        priority: 5,
        env: { A: 'x', PORT: 8080, ON: true },
        am: { cpu: 0.2, memory: '1Gi' },
        tasks: [
          {
            name: 't',
            instances: 3,
            resources: { cpu: 2, memory: '0.5Gi' },
            command: ['sleep', 5],
            env: { K: 'v' },
            cwd: '/tmp',
            maxAttempts: 1,
            locality: { nodes: ['n1'], racks: ['r1', 'r2'] },
            priority: -2,
          },
        ],
      });
      expect(spec.jobId).to.equal('wc-2026.01_a');
      expect(spec.quotaGroup).to.equal('batch');
      expect(spec.priority).to.equal(5);
      expect(spec.env).to.deep.equal({ A: 'x', PORT: '8080', ON: 'true' });
      expect(spec.amResource).to.deep.equal({ cpuMilli: 200, memoryMb: 1024 });
      expect(spec.tasks[0]).to.deep.equal({
        name: 't',
        instances: 3,
        resource: { cpuMilli: 2000, memoryMb: 512 },
        command: { argv: ['sleep', '5'], env: { K: 'v' }, cwd: '/tmp' },
        maxAttempts: 1,
        dependsOn: [],
        locality: { nodes: ['n1'], racks: ['r1', 'r2'] },
        priority: -2,
      });
    });

    it('reads the agent-timeout policy (onAgentTimeout, rerunAfterMs) and defaults it to rerun after 30 s', () => {
      expect(normalizeJobSpec(userJob())).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 30_000 });
      expect(normalizeJobSpec(userJob({ onAgentTimeout: 'wait' }))).to.deep.include({ onAgentTimeout: 'wait', rerunAfterMs: 30_000 });
      expect(normalizeJobSpec(userJob({ onAgentTimeout: 'rerun', rerunAfterMs: 5000 }))).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 5000 });
      // 0 is allowed: re-run as soon as the master reports the agent timing out.
      expect(normalizeJobSpec(userJob({ rerunAfterMs: 0 }))).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 0 });
      expect(normalizeJobSpec(userJob({ onAgentTimeout: null, rerunAfterMs: null }))).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 30_000 });
      const text = 'name: svc\nonAgentTimeout: wait\nrerunAfterMs: 120000\ntasks:\n  - { name: web, resources: { cpu: 1, memory: 1Gi }, command: serve }\n';
      expect(normalizeJobSpec(parseJobSpecText(text))).to.deep.include({ onAgentTimeout: 'wait', rerunAfterMs: 120_000 });
    });

    it('reads the network (connected by default, independent to opt out)', () => {
      expect(normalizeJobSpec(userJob())).to.not.have.property('network');
      expect(isConnectedJob(normalizeJobSpec(userJob()))).to.equal(true);
      expect(normalizeJobSpec(userJob({ network: 'connected' }))).to.deep.include({ network: 'connected' });
      const independent = normalizeJobSpec(userJob({ network: 'independent' }));
      expect(independent).to.deep.include({ network: 'independent' });
      expect(isConnectedJob(independent)).to.equal(false);
      expect(invalid(() => normalizeJobSpec(userJob({ network: 'meshed' }))).message).to.equal(
        'network: must be "connected" (the job\'s hosts must all reach one another) or "independent" (they need not), got "meshed"',
      );
      expect(invalid(() => normalizeJobSpec(userJob({ network: '' }))).field).to.equal('network');
      expect(invalid(() => normalizeJobSpec(userJob({ network: 3 }))).message).to.equal('network: must be a string, got 3');
    });

    it('reads failurePrediction (on by default, off to opt out) and names the field when it is wrong', () => {
      expect(normalizeJobSpec(userJob())).to.not.have.property('failurePrediction');
      expect(predictionOn(normalizeJobSpec(userJob()))).to.equal(true);
      expect(predictionOn(normalizeJobSpec(userJob({ failurePrediction: 'on' })))).to.equal(true);
      const off = normalizeJobSpec(userJob({ failurePrediction: 'off' }));
      expect(off).to.deep.include({ failurePrediction: 'off' });
      expect(predictionOn(off)).to.equal(false);
      expect(invalid(() => normalizeJobSpec(userJob({ failurePrediction: 'maybe' }))).message).to.equal(
        'failurePrediction: must be "on" (the master may blacklist hosts for the job and stop attempts predicted to fail) or "off", got "maybe"',
      );
      expect(invalid(() => normalizeJobSpec(userJob({ failurePrediction: '' }))).field).to.equal('failurePrediction');
      expect(invalid(() => normalizeJobSpec(userJob({ failurePrediction: false }))).field).to.equal('failurePrediction');
      expect(validateJobSpec(domainJob([domainTask('a')], { failurePrediction: '' }))).to.not.have.property('failurePrediction');
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a')], { failurePrediction: 'no' as 'off' }))).field).to.equal('failurePrediction');
    });

    it('reads testbed (absent: anywhere the quota group may go) and names the field when it is wrong', () => {
      expect(normalizeJobSpec(userJob())).to.not.have.property('testbed');
      expect(normalizeJobSpec(userJob({ testbed: 'ml-1' }))).to.deep.include({ testbed: 'ml-1' });
      expect(invalid(() => normalizeJobSpec(userJob({ testbed: '' }))).field).to.equal('testbed');
      expect(invalid(() => normalizeJobSpec(userJob({ testbed: 'ML 1' }))).message).to.match(/^testbed: must be a testbed name/);
      expect(invalid(() => normalizeJobSpec(userJob({ testbed: 7 }))).field).to.equal('testbed');
      expect(validateJobSpec(domainJob([domainTask('a')], { testbed: '' }))).to.not.have.property('testbed');
    });

    it('reads scheduler (an external scheduler by name; absent = the built-in one) and names the field when it is wrong', () => {
      expect(normalizeJobSpec(userJob())).to.not.have.property('scheduler');
      expect(normalizeJobSpec(userJob({ scheduler: 'ffd' }))).to.deep.include({ scheduler: 'ffd' });
      expect(invalid(() => normalizeJobSpec(userJob({ scheduler: '' }))).field).to.equal('scheduler');
      expect(invalid(() => normalizeJobSpec(userJob({ scheduler: 'has space' }))).message).to.match(/^scheduler: must be an external scheduler's name/);
      expect(invalid(() => normalizeJobSpec(userJob({ scheduler: 7 }))).field).to.equal('scheduler');
      expect(validateJobSpec(domainJob([domainTask('a')], { scheduler: '' }))).to.not.have.property('scheduler');
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a')], { scheduler: '-x' }))).field).to.equal('scheduler');
    });

    it('reads gang and minInstances (gang: true = all instances; none = no gang)', () => {
      expect(normalizeJobSpec(userTask(0, { instances: 3, gang: true })).tasks[0]?.minInstances).to.equal(3);
      expect(normalizeJobSpec(userTask(0, { instances: 3, gang: true, minInstances: 3 })).tasks[0]?.minInstances).to.equal(3);
      expect(normalizeJobSpec(userTask(0, { instances: 4, minInstances: 2 })).tasks[0]?.minInstances).to.equal(2);
      expect(normalizeJobSpec(userTask(0, { gang: false })).tasks[0]).to.not.have.property('minInstances');
      expect(normalizeJobSpec(userJob()).tasks[0]).to.not.have.property('minInstances');
      expect(gangSize({ instances: 4, minInstances: 2 })).to.equal(2);
      expect(gangSize({ instances: 4 })).to.equal(1);
    });

    it('validates minInstances of a domain spec (0 = no gang)', () => {
      expect(validateJobSpec(domainJob([domainTask('a', [], { instances: 3, minInstances: 3 })])).tasks[0]?.minInstances).to.equal(3);
      expect(validateJobSpec(domainJob([domainTask('a', [], { instances: 3, minInstances: 0 })])).tasks[0]).to.not.have.property('minInstances');
      const e = invalid(() => validateJobSpec(domainJob([domainTask('a'), domainTask('b', [], { instances: 4, minInstances: 9 })])));
      expect(e.message).to.equal('tasks[1].minInstances: must be between 1 and instances (4), got 9');
    });

    it('defaults instances to 1 and accepts a single dependsOn string', () => {
      const job = userTask(1, { instances: undefined, dependsOn: 'map' });
      const spec = normalizeJobSpec(job);
      expect(spec.tasks[1]?.instances).to.equal(1);
      expect(spec.tasks[1]?.dependsOn).to.deep.equal(['map']);
    });

    it('turns a string command into sh -c', () => {
      const spec = normalizeJobSpec(userTask(0, { command: 'echo $HOME && ls' }));
      expect(spec.tasks[0]?.command.argv).to.deep.equal(['/bin/sh', '-c', 'echo $HOME && ls']);
    });

    it('works end to end from YAML text', () => {
      const text = [
        'id: wc-1',
        'name: wordcount',
        'tasks:',
        '  - name: map',
        '    instances: 20',
        '    resources: { cpu: 0.5, memory: 512Mi }',
        '    command: ["node", "map.mjs", "${instance}"]',
        '  - name: reduce',
        '    resources: { cpu: 1, memory: 1Gi }',
        '    command: node reduce.mjs',
        '    dependsOn: [map]',
      ].join('\n');
      const spec = normalizeJobSpec(parseJobSpecText(text, 'wc.yaml'));
      expect(spec.jobId).to.equal('wc-1');
      expect(spec.tasks.map((t) => t.name)).to.deep.equal(['map', 'reduce']);
      expect(spec.tasks[1]?.resource).to.deep.equal({ cpuMilli: 1000, memoryMb: 1024 });
    });

    describe('rejects', () => {
      const cases: Array<[string, unknown, string, RegExp | string]> = [
        ['a non-mapping', [1, 2], '', /must be a mapping.*got a list/],
        [
          'an unknown top-level field',
          userJob({ taks: [] }),
          '',
          /^unknown field "taks" \(known: id, name, quotaGroup, priority, env, am, tasks, onAgentTimeout, rerunAfterMs, network, speculation, failurePrediction, testbed, scheduler\); did you mean "tasks"\?$/,
        ],
        [
          'an unknown task field',
          userTask(1, { instnaces: 3 }),
          'tasks[1]',
          /^unknown field "instnaces" \(known: name, instances, resources, command, env, cwd, maxAttempts, dependsOn, locality, priority, gang, minInstances\); did you mean "instances"\?$/,
        ],
        ['the domain name "resource"', userTask(0, { resource: { cpu: 1, memory: 1 } }), 'tasks[0]', /unknown field "resource".*did you mean "resources"/],
        ['an unknown resource field', userTask(0, { resources: { cpu: 1, mem: 1 } }), 'tasks[0].resources', /^unknown field "mem" \(known: cpu, memory\)/],
        ['an unknown am field', userJob({ am: { cpu: 1, memory: 1, gpu: 1 } }), 'am', /unknown field "gpu"/],
        ['an unknown locality field', userTask(0, { locality: { hosts: ['a'] } }), 'tasks[0].locality', /unknown field "hosts" \(known: nodes, racks\)/],
        ['a missing name', userJob({ name: undefined }), 'name', 'is required'],
        ['an empty name', userJob({ name: ' ' }), 'name', 'is required'],
        ['a non-string name', userJob({ name: 5 }), 'name', 'must be a string, got 5'],
        ['missing tasks', userJob({ tasks: undefined }), 'tasks', /is required/],
        ['no tasks', userJob({ tasks: [] }), 'tasks', 'must contain at least one task'],
        ['tasks not a list', userJob({ tasks: { a: 1 } }), 'tasks', /must be a list of tasks, got a mapping/],
        ['a task that is not a mapping', userJob({ tasks: ['map'] }), 'tasks[0]', /must be a mapping, got "map"/],
        ['a bad id (uppercase)', userJob({ id: 'WC' }), 'id', /must be 1-63 characters .*got "WC"/],
        ['a bad id (leading dash)', userJob({ id: '-wc' }), 'id', /got "-wc"/],
        ['a bad id (too long)', userJob({ id: 'a'.repeat(64) }), 'id', /must be 1-63 characters/],
        ['a numeric id', userJob({ id: 12 }), 'id', 'must be a string, got 12'],
        ['a non-integer priority', userJob({ priority: 1.5 }), 'priority', 'must be an integer, got 1.5'],
        ['an empty quota group', userJob({ quotaGroup: '' }), 'quotaGroup', /must not be empty/],
        ['an unknown agent-timeout policy', userJob({ onAgentTimeout: 'retry' }), 'onAgentTimeout', 'must be "wait" or "rerun", got "retry"'],
        ['a capitalized agent-timeout policy', userJob({ onAgentTimeout: 'Wait' }), 'onAgentTimeout', 'must be "wait" or "rerun", got "Wait"'],
        ['an empty agent-timeout policy', userJob({ onAgentTimeout: '' }), 'onAgentTimeout', /must be "wait" or "rerun" \(omit it for "rerun"\)/],
        ['a non-string agent-timeout policy', userJob({ onAgentTimeout: true }), 'onAgentTimeout', 'must be a string, got true'],
        ['a negative rerunAfterMs', userJob({ rerunAfterMs: -1 }), 'rerunAfterMs', 'must be an integer from 0 to 2147483647 (milliseconds), got -1'],
        ['a fractional rerunAfterMs', userJob({ rerunAfterMs: 1.5 }), 'rerunAfterMs', 'must be an integer, got 1.5'],
        ['a string rerunAfterMs', userJob({ rerunAfterMs: '30s' }), 'rerunAfterMs', 'must be an integer, got "30s"'],
        ['a huge rerunAfterMs', userJob({ rerunAfterMs: 2 ** 31 }), 'rerunAfterMs', /must be an integer from 0 to 2147483647/],
        ['an env list', userJob({ env: ['A=b'] }), 'env', /must be a mapping.*got a list/],
        ['a bad env name', userJob({ env: { '1X': 'a' } }), 'env.1X', /invalid environment variable name/],
        ['a nested env value', userTask(0, { env: { K: { a: 1 } } }), 'tasks[0].env.K', 'must be a string, got a mapping'],
        ['a missing task name', userTask(0, { name: undefined }), 'tasks[0].name', 'is required'],
        ['a bad task name', userTask(0, { name: 'map phase' }), 'tasks[0].name', /must be 1-63 characters .*got "map phase"/],
        ['the reserved task name', userTask(0, { name: '__am__' }), 'tasks[0].name', /reserved for the application master/],
        ['a duplicate task name', userTask(1, { name: 'map', dependsOn: [] }), 'tasks[1].name', 'duplicate task name "map" (also tasks[0])'],
        ['zero instances', userTask(0, { instances: 0 }), 'tasks[0].instances', 'must be an integer from 1 to 100000, got 0'],
        ['too many instances', userTask(0, { instances: 100_001 }), 'tasks[0].instances', /got 100001/],
        ['fractional instances', userTask(0, { instances: 1.5 }), 'tasks[0].instances', 'must be an integer, got 1.5'],
        ['string instances', userTask(0, { instances: '3' }), 'tasks[0].instances', 'must be an integer, got "3"'],
        ['missing resources', userTask(0, { resources: undefined }), 'tasks[0].resources', /is required/],
        ['missing cpu', userTask(0, { resources: { memory: 1 } }), 'tasks[0].resources.cpu', /is required/],
        ['missing memory', userTask(0, { resources: { cpu: 1 } }), 'tasks[0].resources.memory', /is required/],
        ['negative cpu', userTask(1, { resources: { cpu: -1, memory: 1 } }), 'tasks[1].resources.cpu', 'must be greater than 0, got -1'],
        ['negative millicores', userTask(1, { resources: { cpu: '-500m', memory: 1 } }), 'tasks[1].resources.cpu', 'must be greater than 0, got -0.5'],
        ['zero cpu', userTask(0, { resources: { cpu: 0, memory: 1 } }), 'tasks[0].resources.cpu', 'must be greater than 0, got 0'],
        ['"0m" cpu', userTask(0, { resources: { cpu: '0m', memory: 1 } }), 'tasks[0].resources.cpu', 'must be greater than 0, got 0'],
        ['a tiny cpu', userTask(0, { resources: { cpu: 0.0001, memory: 1 } }), 'tasks[0].resources.cpu', /at least 0.001 cores/],
        ['an unparsable cpu', userTask(0, { resources: { cpu: 'lots', memory: 1 } }), 'tasks[0].resources.cpu', /must be a number of cores.*got "lots"/],
        ['zero memory', userTask(0, { resources: { cpu: 1, memory: 0 } }), 'tasks[0].resources.memory', 'must be greater than 0, got 0'],
        ['negative memory', userTask(0, { resources: { cpu: 1, memory: '-1Gi' } }), 'tasks[0].resources.memory', 'must be greater than 0, got -1024'],
        ['a bad memory unit', userTask(0, { resources: { cpu: 1, memory: '5 parsecs' } }), 'tasks[0].resources.memory', /"512Mi".*got "5 parsecs"/],
        ['zero am resources', userJob({ am: { cpu: 0, memory: 0 } }), 'am.cpu', 'must be greater than 0, got 0'],
        ['zero am memory', userJob({ am: { cpu: 1, memory: 0 } }), 'am.memory', 'must be greater than 0, got 0'],
        ['a missing command', userTask(0, { command: undefined }), 'tasks[0].command', /^is required \(an argv list/],
        ['an empty argv', userTask(0, { command: [] }), 'tasks[0].command', /^must not be empty \(an argv list/],
        ['an empty command string', userTask(0, { command: '  ' }), 'tasks[0].command', /^must not be empty/],
        ['an empty program', userTask(0, { command: [''] }), 'tasks[0].command[0]', /must not be empty/],
        ['a non-string argument', userTask(0, { command: ['a', { b: 1 }] }), 'tasks[0].command[1]', 'must be a string, got a mapping'],
        ['a command mapping', userTask(0, { command: { run: 'x' } }), 'tasks[0].command', /must be an argv list.*got a mapping/],
        ['zero maxAttempts', userTask(0, { maxAttempts: 0 }), 'tasks[0].maxAttempts', 'must be an integer >= 1, got 0'],
        ['negative maxAttempts', userTask(0, { maxAttempts: -3 }), 'tasks[0].maxAttempts', 'must be an integer >= 1, got -3'],
        ['a non-list dependsOn', userTask(1, { dependsOn: { map: true } }), 'tasks[1].dependsOn', /must be a list of strings/],
        ['a non-string dependency', userTask(1, { dependsOn: ['map', 3] }), 'tasks[1].dependsOn[1]', 'must be a string, got 3'],
        ['an unknown dependency', userTask(1, { dependsOn: ['map', 'x'] }), 'tasks[1].dependsOn[1]', 'unknown task "x" (tasks in this job: map, reduce)'],
        ['a self dependency', userTask(0, { dependsOn: ['map'] }), 'tasks[0].dependsOn[0]', 'task "map" cannot depend on itself'],
        ['a repeated dependency', userTask(1, { dependsOn: ['map', 'map'] }), 'tasks[1].dependsOn[1]', 'duplicate dependency "map"'],
        ['a cycle', userTask(0, { dependsOn: ['reduce'] }), 'tasks[0].dependsOn', 'cycle: map -> reduce -> map'],
        ['minInstances above instances', userTask(1, { instances: 4, minInstances: 9 }), 'tasks[1].minInstances', 'must be between 1 and instances (4), got 9'],
        ['zero minInstances', userTask(0, { minInstances: 0 }), 'tasks[0].minInstances', 'must be between 1 and instances (2), got 0'],
        ['fractional minInstances', userTask(0, { minInstances: 1.5 }), 'tasks[0].minInstances', 'must be an integer, got 1.5'],
        ['a non-boolean gang', userTask(0, { gang: 'yes' }), 'tasks[0].gang', 'must be true or false, got "yes"'],
        [
          'gang: true with a smaller minInstances',
          userTask(0, { instances: 4, gang: true, minInstances: 2 }),
          'tasks[0].minInstances',
          /^gang: true means all 4 instances/,
        ],
        ['gang: false with minInstances', userTask(0, { gang: false, minInstances: 2 }), 'tasks[0].gang', /^is false but minInstances is 2/],
        ['an empty locality node', userTask(0, { locality: { nodes: [''] } }), 'tasks[0].locality.nodes[0]', /non-empty node id/],
      ];
      for (const [what, raw, field, reason] of cases) {
        it(what, () => {
          const e = invalid(() => normalizeJobSpec(raw));
          expect(e.field, e.message).to.equal(field);
          if (typeof reason === 'string') expect(e.reason).to.equal(reason);
          else expect(e.reason).to.match(reason);
          expect(e.message).to.equal(field ? `${field}: ${e.reason}` : e.reason);
          expect(e.code).to.equal('INVALID_ARGUMENT');
        });
      }
    });

    it('reports shape problems before range problems, first task first', () => {
      const job = userJob();
      const tasks = job.tasks as Record<string, unknown>[];
      tasks[0] = { ...tasks[0], resources: { cpu: -1, memory: 1 } };
      tasks[1] = { ...tasks[1], bogus: 1 };
      expect(invalid(() => normalizeJobSpec(job)).field).to.equal('tasks[1]');
      tasks[1] = { ...tasks[1], bogus: undefined, instances: 0 };
      delete tasks[1].bogus;
      expect(invalid(() => normalizeJobSpec(job)).field).to.equal('tasks[0].resources.cpu');
    });

    it('reports a longer cycle starting at its first task', () => {
      const job = {
        name: 'c',
        tasks: ['a', 'b', 'c', 'd'].map((n, i, all) => ({
          name: n,
          resources: { cpu: 1, memory: 1 },
          command: 'true',
          dependsOn: n === 'a' ? [] : [all[i === 3 ? 1 : i + 1]],
        })),
      };
      // b -> c -> d -> b
      const e = invalid(() => normalizeJobSpec(job));
      expect(e.message).to.equal('tasks[1].dependsOn: cycle: b -> c -> d -> b');
    });
  });

  describe('validateJobSpec', () => {
    it('accepts a valid spec and returns an equal copy', () => {
      const spec = domainJob([domainTask('a'), domainTask('b', ['a'])]);
      const out = validateJobSpec(spec);
      expect(out).to.deep.equal(spec);
      expect(out).to.not.equal(spec);
    });

    it('takes an unset network (proto3 "") as connected and refuses an unknown one, naming the field', () => {
      expect(validateJobSpec(domainJob([domainTask('a')], { network: '' }))).to.not.have.property('network');
      expect(validateJobSpec(domainJob([domainTask('a')], { network: 'independent' })).network).to.equal('independent');
      const e = invalid(() => validateJobSpec(domainJob([domainTask('a')], { network: 'mesh' as JobSpec['network'] })));
      expect(e.field).to.equal('network');
      expect(e.reason).to.contain('must be "connected"');
    });

    it('rejects a task graph an application master could not run (the AM core relies on this)', () => {
      const cycle = domainJob([domainTask('a', ['b']), domainTask('b', ['a'])]);
      expect(invalid(() => validateJobSpec(cycle)).message).to.equal('tasks[0].dependsOn: cycle: a -> b -> a');
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a', ['zz'])]))).message).to.equal(
        'tasks[0].dependsOn[0]: unknown task "zz" (tasks in this job: a)',
      );
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a'), domainTask('a')]))).message).to.equal(
        'tasks[1].name: duplicate task name "a" (also tasks[0])',
      );
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a', [], { instances: -1 })]))).field).to.equal('tasks[0].instances');
    });

    it('fills proto3 zero values with defaults', () => {
      const spec = domainJob([domainTask('a', [], { maxAttempts: 0 })], { quotaGroup: '', amResource: { cpuMilli: 0, memoryMb: 0 } });
      const out = validateJobSpec(spec);
      expect(out.quotaGroup).to.equal('default');
      expect(out.amResource).to.deep.equal(DEFAULT_SHARED_AM_RESOURCE);
      expect(out.amMode).to.equal('shared');
      expect(out.tasks[0]?.maxAttempts).to.equal(3);
      const unsetMode = { ...spec, amMode: '' } as unknown as JobSpec;
      expect(validateJobSpec(unsetMode)).to.deep.include({ amMode: 'shared', amResource: DEFAULT_SHARED_AM_RESOURCE });
      expect(validateJobSpec({ ...spec, amMode: 'dedicated' })).to.deep.include({ amMode: 'dedicated', amResource: DEFAULT_AM_RESOURCE });
      const badMode = { ...spec, amMode: 'own' } as unknown as JobSpec;
      expect(invalid(() => validateJobSpec(badMode)).message).to.equal('am.mode: must be "shared" or "dedicated", got "own"');
    });

    it('reads the AM mode: a word, or a mapping with the slot', () => {
      expect(normalizeJobSpec(userJob({}))).to.deep.include({ amMode: 'shared', amResource: DEFAULT_SHARED_AM_RESOURCE });
      expect(normalizeJobSpec(userJob({ am: 'dedicated' }))).to.deep.include({ amMode: 'dedicated', amResource: DEFAULT_AM_RESOURCE });
      expect(normalizeJobSpec(userJob({ am: 'shared' }))).to.deep.include({ amMode: 'shared', amResource: DEFAULT_SHARED_AM_RESOURCE });
      expect(normalizeJobSpec(userJob({ am: { mode: 'dedicated' } }))).to.deep.include({ amMode: 'dedicated', amResource: DEFAULT_AM_RESOURCE });
      expect(normalizeJobSpec(userJob({ am: { mode: 'dedicated', cpu: 0.5, memory: '1Gi' } }))).to.deep.include({
        amMode: 'dedicated',
        amResource: { cpuMilli: 500, memoryMb: 1024 },
      });
      // A slot without a mode keeps the default mode (shared) with that slot.
      expect(normalizeJobSpec(userJob({ am: { cpu: 0.2, memory: 64 } }))).to.deep.include({ amMode: 'shared', amResource: { cpuMilli: 200, memoryMb: 64 } });
      expect(invalid(() => normalizeJobSpec(userJob({ am: 'own' }))).message).to.equal(
        'am: must be "shared" (the node\'s AM host) or "dedicated" (a process of its own), got "own"',
      );
      expect(invalid(() => normalizeJobSpec(userJob({ am: { mode: 3 } }))).field).to.equal('am.mode');
      expect(invalid(() => normalizeJobSpec(userJob({ am: { mode: 'dedicated', cpu: 1 } }))).field).to.equal('am.memory');
      expect(invalid(() => normalizeJobSpec(userJob({ am: { mdoe: 'dedicated' } }))).message).to.match(
        /unknown field "mdoe" \(known: mode, cpu, memory\); did you mean "mode"\?/,
      );
      expect(invalid(() => normalizeJobSpec(userJob({ am: 5 }))).field).to.equal('am');
    });

    it('fills an unset agent-timeout policy (proto3 zero values) and checks a set one', () => {
      const unset = { ...domainJob([domainTask('a')]), onAgentTimeout: '', rerunAfterMs: 0 } as unknown as JobSpec;
      expect(validateJobSpec(unset)).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 30_000 });
      const absent = { ...domainJob([domainTask('a')]), onAgentTimeout: undefined, rerunAfterMs: undefined } as unknown as JobSpec;
      expect(validateJobSpec(absent)).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 30_000 });
      // An unset policy with a time: the default policy with that time.
      const timeOnly = { ...domainJob([domainTask('a')]), onAgentTimeout: '', rerunAfterMs: 700 } as unknown as JobSpec;
      expect(validateJobSpec(timeOnly)).to.deep.include({ onAgentTimeout: 'rerun', rerunAfterMs: 700 });
      // A set policy keeps an explicit 0.
      expect(validateJobSpec(domainJob([domainTask('a')], { onAgentTimeout: 'rerun', rerunAfterMs: 0 }))).to.deep.include({
        onAgentTimeout: 'rerun',
        rerunAfterMs: 0,
      });
      expect(validateJobSpec(domainJob([domainTask('a')], { onAgentTimeout: 'wait', rerunAfterMs: 0 }))).to.deep.include({
        onAgentTimeout: 'wait',
        rerunAfterMs: 0,
      });
      const bad = { ...domainJob([domainTask('a')]), onAgentTimeout: 'never' } as unknown as JobSpec;
      expect(invalid(() => validateJobSpec(bad)).message).to.equal('onAgentTimeout: must be "wait" or "rerun", got "never"');
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a')], { rerunAfterMs: -5 }))).field).to.equal('rerunAfterMs');
      expect(invalid(() => validateJobSpec(domainJob([domainTask('a')], { rerunAfterMs: 0.5 }))).field).to.equal('rerunAfterMs');
      const str = { ...domainJob([domainTask('a')]), rerunAfterMs: '5' } as unknown as JobSpec;
      expect(invalid(() => validateJobSpec(str)).message).to.equal('rerunAfterMs: must be an integer from 0 to 2147483647 (milliseconds), got "5"');
    });

    it('gives the same messages as normalize for the same problems', () => {
      const pairs: Array<[Record<string, unknown>, JobSpec]> = [
        [
          userTask(1, { resources: { cpu: -1, memory: 1 } }),
          domainJob([domainTask('map'), domainTask('reduce', [], { resource: { cpuMilli: -1000, memoryMb: 1 } })]),
        ],
        [userTask(0, { resources: { cpu: 1, memory: 0 } }), domainJob([domainTask('map', [], { resource: { cpuMilli: 1000, memoryMb: 0 } })])],
        [userTask(0, { command: [] }), domainJob([domainTask('map', [], { command: { argv: [], env: {}, cwd: '' } })])],
        [userTask(1, { name: 'map', dependsOn: [] }), domainJob([domainTask('map'), domainTask('map')])],
        [userTask(1, { dependsOn: ['x'] }), domainJob([domainTask('map'), domainTask('reduce', ['x'])])],
        [userTask(0, { dependsOn: ['map'] }), domainJob([domainTask('map', ['map'])])],
        [userTask(0, { dependsOn: ['reduce'] }), domainJob([domainTask('map', ['reduce']), domainTask('reduce', ['map'])])],
        [userJob({ id: 'Bad' }), domainJob([domainTask('a')], { jobId: 'Bad' })],
        [userJob({ name: '' }), domainJob([domainTask('a')], { name: '' })],
        [userJob({ tasks: [] }), domainJob([])],
        [userTask(0, { instances: 0 }), domainJob([domainTask('map', [], { instances: 0 })])],
        [userTask(0, { maxAttempts: -1 }), domainJob([domainTask('map', [], { maxAttempts: -1 })])],
        [userJob({ am: { cpu: 0.1, memory: 0 } }), domainJob([domainTask('a')], { amResource: { cpuMilli: 100, memoryMb: 0 } })],
        [userJob({ onAgentTimeout: 'later' }), domainJob([domainTask('a')], { onAgentTimeout: 'later' as 'wait' })],
        [userJob({ rerunAfterMs: -1 }), domainJob([domainTask('a')], { rerunAfterMs: -1 })],
      ];
      for (const [user, domain] of pairs) {
        const a = invalid(() => normalizeJobSpec(user));
        const b = invalid(() => validateJobSpec(domain));
        // Unknown-task lists differ with the task names; compare up to the list.
        expect(b.field).to.equal(a.field);
        expect(b.reason.replace(/ \(tasks in this job: .*\)$/, '')).to.equal(a.reason.replace(/ \(tasks in this job: .*\)$/, ''));
      }
    });

    it('handles a proto-style spec with missing submessages', () => {
      const spec = domainJob([{ ...domainTask('a'), resource: undefined, command: undefined } as unknown as TaskSpec]);
      expect(invalid(() => validateJobSpec(spec)).message).to.equal('tasks[0].resources.cpu: must be greater than 0, got 0');
      const spec2 = domainJob([{ ...domainTask('a'), command: undefined, locality: undefined } as unknown as TaskSpec]);
      expect(invalid(() => validateJobSpec(spec2)).field).to.equal('tasks[0].command');
    });

    describe('with node capacities', () => {
      const caps = [
        { cpuMilli: 4000, memoryMb: 8192 },
        { cpuMilli: 8000, memoryMb: 4096 },
      ];

      it('accepts instances that fit on some node', () => {
        validateJobSpec(domainJob([domainTask('a', [], { resource: { cpuMilli: 8000, memoryMb: 4096 } })]), { nodeCapacities: caps });
        validateJobSpec(domainJob([domainTask('a', [], { resource: { cpuMilli: 4000, memoryMb: 8192 } })]), { nodeCapacities: caps });
      });

      it('rejects an instance that fits on no node', () => {
        const e = invalid(() =>
          validateJobSpec(domainJob([domainTask('a'), domainTask('b', [], { resource: { cpuMilli: 16000, memoryMb: 512 } })]), { nodeCapacities: caps }),
        );
        expect(e.message).to.equal('tasks[1].resources: cpu=16 mem=512Mi is larger than every node (largest: cpu=8 mem=8Gi)');
      });

      it('rejects an instance that exceeds every node in some dimension', () => {
        const e = invalid(() => validateJobSpec(domainJob([domainTask('a', [], { resource: { cpuMilli: 5000, memoryMb: 5000 } })]), { nodeCapacities: caps }));
        expect(e.field).to.equal('tasks[0].resources');
        expect(e.reason).to.match(/^cpu=5 mem=5000Mi is larger than every node/);
      });

      it('rejects an AM that fits on no node', () => {
        const e = invalid(() => validateJobSpec(domainJob([domainTask('a')], { amResource: { cpuMilli: 100, memoryMb: 10_000 } }), { nodeCapacities: caps }));
        expect(e.message).to.equal('am: cpu=100m mem=10000Mi is larger than every node (largest: cpu=8 mem=8Gi)');
      });

      it('skips the check when no nodes are known', () => {
        validateJobSpec(domainJob([domainTask('a', [], { resource: { cpuMilli: 1e6, memoryMb: 1e6 } })]), { nodeCapacities: [] });
      });
    });
  });

  describe('topoOrder', () => {
    it('orders tasks after their dependencies, stable otherwise', () => {
      const tasks = [domainTask('reduce', ['map', 'combine']), domainTask('map'), domainTask('combine', ['map']), domainTask('other')];
      expect(topoOrder(tasks)).to.deep.equal(['map', 'combine', 'reduce', 'other']);
    });

    it('keeps spec order for independent tasks', () => {
      expect(topoOrder([domainTask('c'), domainTask('b'), domainTask('a')])).to.deep.equal(['c', 'b', 'a']);
    });

    it('handles diamonds', () => {
      const tasks = [domainTask('d', ['b', 'c']), domainTask('c', ['a']), domainTask('b', ['a']), domainTask('a')];
      expect(topoOrder(tasks)).to.deep.equal(['a', 'c', 'b', 'd']);
    });

    it('throws on a cycle', () => {
      const e = invalid(() => topoOrder([domainTask('a', ['b']), domainTask('b', ['a'])]));
      expect(e.reason).to.equal('cycle: a -> b -> a');
    });

    it('returns [] for no tasks', () => {
      expect(topoOrder([])).to.deep.equal([]);
    });
  });

  describe('taskPriority', () => {
    it("is the task's own priority when it sets one, else the job's", () => {
      expect(taskPriority({ priority: 3 }, { priority: 0 })).to.equal(3);
      expect(taskPriority({ priority: 3 }, { priority: 7 })).to.equal(7);
      expect(taskPriority({ priority: 3 }, { priority: -1 })).to.equal(-1);
    });
  });
});

describe('resource comparisons', () => {
  it('names the dimensions in which one resource is larger than another', () => {
    expect(dimensionsOver(res(1000, 512), res(1000, 512))).to.deep.equal([]);
    expect(dimensionsOver(res(1001, 512), res(1000, 512))).to.deep.equal(['cpuMilli']);
    expect(dimensionsOver(res(2000, 2048), res(1000, 512))).to.deep.equal(['cpuMilli', 'memoryMb']);
    expect(dimensionsOver(res(500, 4096), res(1000, 512))).to.deep.equal(['memoryMb']);
    expect(min(res(500, 4096), res(1000, 512))).to.deep.equal(res(500, 512));
  });
});
