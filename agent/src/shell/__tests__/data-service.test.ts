/**
 * The agent data service over real files: only a succeeded worker's output directory is served,
 * by worker id or by task and instance, also for workers of an earlier agent run (found on disk);
 * paths that leave the directory are refused with the field named.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@fuxi/common';
import type { FetchOutputRequest__Output } from '@fuxi/proto';
import type { WorkerInfo } from '../../core/agent-core.js';
import { checkRelativePath, DataService } from '../data-service.js';
import { outputDir, workerDir } from '../process-driver.js';

function req(over: Partial<FetchOutputRequest__Output>): FetchOutputRequest__Output {
  return { appId: 'app1', workerId: '', task: '', instance: 0, path: 'part-0.json', offset: '0', readerWorkerId: '', readerNodeId: '', ...over };
}

describe('agent data service', () => {
  let dir: string;
  let workers: WorkerInfo[];
  let svc: DataService;

  const worker = (workerId: string, state: WorkerInfo['state'], instance = 0, attempt = 1): WorkerInfo =>
    ({ appId: 'app1', workerId, task: 'map', instance, attempt, state }) as unknown as WorkerInfo;
  const write = (workerId: string, file: string, text: string) => {
    const d = outputDir(dir, 'app1', workerId);
    fs.mkdirSync(path.dirname(path.join(d, file)), { recursive: true });
    fs.writeFileSync(path.join(d, file), text);
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-data-'));
    workers = [];
    svc = new DataService({
      workDir: dir,
      workers: { byId: (a, w) => workers.find((x) => x.appId === a && x.workerId === w), list: (a) => workers.filter((x) => x.appId === a) },
    });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('serves a succeeded worker by id and by task and instance', async () => {
    workers.push(worker('map.0.1', 'FAILED'), worker('map.0.2', 'SUCCEEDED', 0, 2));
    write('map.0.2', 'part-0.json', '{"a":1}');
    const byId = await svc.resolve(req({ workerId: 'map.0.2' }));
    expect(byId.workerId).to.equal('map.0.2');
    expect(byId.size).to.equal(7);
    expect(fs.readFileSync(byId.file, 'utf8')).to.equal('{"a":1}');
    expect((await svc.resolve(req({ task: 'map', instance: 0 }))).workerId).to.equal('map.0.2');
  });

  it('refuses a worker that has not succeeded (its output is not complete)', async () => {
    workers.push(worker('map.0.1', 'RUNNING'));
    write('map.0.1', 'part-0.json', '{}');
    await expectReject(svc.resolve(req({ workerId: 'map.0.1' })), FailedPreconditionError, /has not succeeded \(RUNNING\)/);
    await expectReject(svc.resolve(req({ task: 'map', instance: 0 })), FailedPreconditionError, /has not succeeded/);
  });

  it('finds a worker of an earlier agent run by its files', async () => {
    const wd = workerDir(dir, 'app1', 'map.3.1');
    write('map.3.1', 'part-0.json', 'x');
    fs.writeFileSync(path.join(wd, 'cmd.json'), JSON.stringify({ workerId: 'map.3.1', task: 'map', instance: 3, attempt: 1 }));
    fs.writeFileSync(path.join(wd, 'exit'), '0\n');
    expect((await svc.resolve(req({ workerId: 'map.3.1' }))).size).to.equal(1);
    expect((await svc.resolve(req({ task: 'map', instance: 3 }))).workerId).to.equal('map.3.1');
    fs.writeFileSync(path.join(wd, 'exit'), '1\n');
    await expectReject(svc.resolve(req({ workerId: 'map.3.1' })), FailedPreconditionError, /exit code 1/);
  });

  it('is NOT_FOUND for an unknown worker or file', async () => {
    workers.push(worker('map.0.1', 'SUCCEEDED'));
    await expectReject(svc.resolve(req({ workerId: 'map.9.1' })), NotFoundError, /app1\/map\.9\.1/);
    await expectReject(svc.resolve(req({ workerId: 'map.0.1', path: 'nope.json' })), NotFoundError, /nope\.json/);
  });

  it('never serves a file outside the output directory', async () => {
    workers.push(worker('map.0.1', 'SUCCEEDED'));
    write('map.0.1', 'part-0.json', 'x');
    fs.writeFileSync(path.join(workerDir(dir, 'app1', 'map.0.1'), 'stdout'), 'secret');
    fs.symlinkSync('/etc/hostname', path.join(outputDir(dir, 'app1', 'map.0.1'), 'link'));
    await expectReject(svc.resolve(req({ workerId: 'map.0.1', path: '../stdout' })), InvalidArgumentError, /^path: .*leaves the worker's output directory/);
    await expectReject(svc.resolve(req({ workerId: 'map.0.1', path: '/etc/passwd' })), InvalidArgumentError, /^path: must be relative/);
    await expectReject(svc.resolve(req({ workerId: 'map.0.1', path: 'link' })), InvalidArgumentError, /^path: /);
    expect(checkRelativePath('a/./b/../c.json')).to.equal('a/c.json');
    expect(() => checkRelativePath('')).to.throw(InvalidArgumentError, /^path: /);
  });
});

async function expectReject(p: Promise<unknown>, type: new (...a: never[]) => Error, message: RegExp): Promise<void> {
  try {
    await p;
  } catch (e) {
    expect(e).to.be.instanceOf(type);
    expect((e as Error).message).to.match(message);
    return;
  }
  expect.fail('expected a rejection');
}
