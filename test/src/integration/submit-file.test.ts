/**
 * `fuxi submit -f` and job array ids against a local cluster with real processes: refusals only the
 * master makes (an unknown quota group, a job and a job array sharing an id) leave nothing
 * submitted, and the CLI names each refused line; a file the master takes whole is submitted.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type LocalCluster } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import { job, startCluster, stopCluster } from '../harness.js';

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

describe('fuxi submit -f: all or nothing (real processes)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('submit-file', { agents: 1 });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  const cli = (args: string[]): Promise<CliRun> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [BIN.cli, '--master', cluster.masterAddress, ...args],
        { env: { ...process.env, ...cluster.clientEnv() }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  const line = (id: string, over: Record<string, unknown> = {}) =>
    JSON.stringify({
      ...(id ? { id } : {}),
      name: id || 'anon',
      tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: ['true'] }],
      ...over,
    });
  const ids = async () => (await client.list()).map((j) => j.jobId).sort();

  it('a file with bad lines in the middle submits nothing and names each bad line; the file without them is submitted', async () => {
    // A job array "sweep" and a plain job "solo" exist.
    await client.submitArray(
      job({ id: 'sweep', name: 'sweep', tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: ['true'] }] }),
      {
        indices: [0, 1],
      },
    );
    await client.submit(job({ id: 'solo', name: 'solo', tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: ['true'] }] }));
    const before = await ids();
    expect(before).to.deep.equal(['solo', 'sweep_0', 'sweep_1']);

    const good = [line('f1'), line('f2'), line('f3'), line('')];
    const file = join(cluster.opts.dir, 'jobs.jsonl');
    writeFileSync(file, [good[0], good[1], '# bad lines follow', line('sweep'), line('g1', { quotaGroup: 'nope' }), good[2], good[3], ''].join('\n'));
    const r = await cli(['submit', '-f', file]);
    expect(r.code, r.stderr).to.equal(2);
    const out = r.stdout.trim().split('\n');
    expect(out).to.have.length(2);
    expect(out[0]).to.equal(
      `sweep\trefused: ${file}:4: job array "sweep" already exists (a job may not have the id of a job array: fuxi status, wait and kill take the id of either)`,
    );
    expect(out[1]).to.match(new RegExp(`^g1\\trefused: ${file}:5: quotaGroup: unknown quota group "nope"`));
    expect(r.stderr).to.equal(`error: 2 of 6 jobs refused (${file} lines 4, 5); nothing was submitted\n`);
    expect(await ids()).to.deep.equal(before);

    writeFileSync(file, `${good.join('\n')}\n`);
    const ok = await cli(['-o', 'json', 'submit', '-f', file]);
    expect(ok.code, ok.stderr).to.equal(0);
    const rows = JSON.parse(ok.stdout) as Array<{ jobId: string; line: number; created: boolean; error: string }>;
    expect(rows.map((x) => [x.line, x.created, x.error])).to.deep.equal([
      [1, true, ''],
      [2, true, ''],
      [3, true, ''],
      [4, true, ''],
    ]);
    expect(await ids()).to.deep.equal([...before, 'f1', 'f2', 'f3', rows[3]!.jobId].sort());
  });

  it('a job array may not take the id of a job, nor a job the id of an array: every member refused, none made', async () => {
    const spec = join(cluster.opts.dir, 'one.yaml');
    writeFileSync(spec, 'name: one\ntasks:\n  - {name: t, instances: 1, resources: {cpu: 0.1, memory: 32Mi}, command: ["true"]}\n');
    const before = await ids();
    const arr = await cli(['submit', spec, '--id', 'solo', '--array', '0-2']);
    expect(arr.code).to.equal(2);
    expect(arr.stdout).to.match(/solo_0\trefused: job "solo" already exists \(job solo_0 may not make a job array of its id/);
    expect(arr.stderr).to.equal('error: 3 of 3 members of array solo refused; nothing was submitted\n');
    const plain = await cli(['submit', spec, '--id', 'sweep']);
    expect(plain.code).to.equal(2);
    expect(plain.stderr).to.match(/job array "sweep" already exists/);
    expect(await ids()).to.deep.equal(before);
    // Status still names one thing each.
    expect((await cli(['status', 'sweep'])).stdout).to.match(/array: +sweep \(2 jobs\)/);
  });

  it('--array with one member the master refuses submits no member: no array is left half made', async () => {
    const spec = join(cluster.opts.dir, 'two.yaml');
    writeFileSync(spec, 'name: two\ntasks:\n  - {name: t, instances: 1, resources: {cpu: 0.1, memory: 32Mi}, command: ["true"]}\n');
    // A job of another spec holds member 3's id.
    await client.submit(job({ id: 'half_3', name: 'other', tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: ['true'] }] }));
    const before = await ids();
    const r = await cli(['submit', spec, '--id', 'half', '--array', '0-5%2']);
    expect(r.code, r.stderr).to.equal(2);
    expect(r.stdout).to.match(/^half_3\trefused: .*already exists/);
    expect(r.stdout.trim().split('\n')).to.have.length(1);
    expect(r.stderr).to.equal('error: 1 of 6 members of array half refused; nothing was submitted\n');
    expect(await ids()).to.deep.equal(before);
    expect(await client.list({ arrayId: 'half' })).to.deep.equal([]);
    // Without the member the master refuses, the array is made whole.
    const ok = await cli(['submit', spec, '--id', 'half', '--array', '0-2,4-5%2']);
    expect(ok.code, ok.stderr).to.equal(0);
    expect((await client.list({ arrayId: 'half' })).map((j) => j.jobId).sort()).to.deep.equal(['half_0', 'half_1', 'half_2', 'half_4', 'half_5']);
  });
});
