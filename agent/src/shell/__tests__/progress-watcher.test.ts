import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { PathRecord, WorkerStatus } from '@fuxi/proto';
import type { WorkerInfo } from '../../core/agent-core.js';
import { ProgressWatcher } from '../progress-watcher.js';
import { workerDir } from '../process-driver.js';
import { TransferMeter } from '../transfer-meter.js';

function worker(over: Partial<WorkerInfo> = {}): WorkerInfo {
  return {
    workerId: 'reduce.0.1',
    appId: 'app1',
    suId: 'reduce',
    task: 'reduce',
    instance: 0,
    attempt: 1,
    amAttempt: 1,
    amAddress: '10.0.0.5:9000',
    nodeId: 'n1',
    command: { argv: ['true'], env: {}, cwd: '' },
    resource: { cpuMilli: 100, memoryMb: 64 },
    state: 'RUNNING',
    pid: 42,
    startTime: '1',
    bootId: '',
    exitCode: null,
    signal: null,
    message: '',
    acceptedAtMs: 1,
    startedAtMs: 2,
    finishedAtMs: 0,
    stopReason: '',
    ...over,
  };
}

describe('progress watcher (workers progress files and served transfers to their AMs)', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-pw-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('sends a running worker its progress and paths once per change of its file, nothing after it ended, and served transfers to their AM', async () => {
    let w = worker();
    const sent: Array<{ appId: string; address: string; status: WorkerStatus }> = [];
    const paths: Array<{ appId: string; address: string; paths: readonly PathRecord[] }> = [];
    const meter = new TransferMeter('n1');
    const pw = new ProgressWatcher({
      workDir: dir,
      nodeId: 'n1',
      running: () => (w.state === 'RUNNING' ? [w] : []),
      current: () => w,
      amAddressOf: () => '10.0.0.5:9000',
      events: {
        push: (appId, address, status) => sent.push({ appId, address, status }),
        pushPaths: (appId, address, p) => paths.push({ appId, address, paths: p }),
      },
      meter,
    });
    const wd = workerDir(dir, 'app1', 'reduce.0.1');
    fs.mkdirSync(wd, { recursive: true });
    await pw.round();
    expect(sent).to.deep.equal([]); // no file yet
    fs.writeFileSync(
      path.join(wd, 'progress.json'),
      JSON.stringify({ fraction: 0.5, paths: [{ srcNode: 'n3', srcWorker: 'map.2.1', bytes: 100, elapsedMs: 900, done: false }] }),
    );
    await pw.round();
    await pw.round();
    expect(sent).to.have.length(1);
    expect(sent[0]!.status).to.deep.include({ workerId: 'reduce.0.1', state: 'WORKER_STATE_RUNNING', progress: 0.5 });
    expect(sent[0]!.status.paths).to.deep.equal([
      { srcNode: 'n3', dstNode: 'n1', srcWorker: 'map.2.1', readerWorker: 'reduce.0.1', bytes: '100', elapsedMs: '900', done: false },
    ]);
    // A transfer this node serves goes to the reader's AM.
    const t = meter.begin({ appId: 'app1', srcWorker: 'map.0.1', readerWorker: 'reduce.3.1', readerNode: 'n4' }, Date.now());
    meter.add(t, 10);
    // The worker ended meanwhile: its file is not sent again.
    w = worker({ state: 'SUCCEEDED' });
    fs.writeFileSync(path.join(wd, 'progress.json'), JSON.stringify({ fraction: 1 }));
    await pw.round();
    expect(sent).to.have.length(1);
    expect(paths).to.have.length(1);
    expect(paths[0]).to.deep.include({ appId: 'app1', address: '10.0.0.5:9000' });
    expect(paths[0]!.paths[0]).to.deep.include({ srcNode: 'n1', dstNode: 'n4', readerWorker: 'reduce.3.1', bytes: '10', done: false });
  });
});
