/**
 * The history checker on small hand-written histories: a clean one passes, and each bad one
 * (a lost acknowledged submit, a duplicate, a phantom, a job shown then missing, a killed job
 * still running, a daemon exit, ...) is caught as exactly the anomaly it is.
 */
import { expect } from 'chai';
import { FuxiError } from '@fuxi/common';
import { checkHistory, type AnomalyKind, type FinalState } from '../checker.js';
import { classifyFailure, HistoryRecorder, type JobView, type Op } from '../history.js';

const S = 'JOB_STATE_SUCCEEDED';
const R = 'JOB_STATE_RUNNING';
const K = 'JOB_STATE_KILLED';

/** A history built op by op; each op takes 10 ms and the next starts 10 ms later. */
function history(...specs: Array<Omit<Op, 'index' | 'invokeMs' | 'completeMs'> & { at?: number; until?: number }>): Op[] {
  return specs.map(({ at, until, ...o }, i) => ({ index: i, invokeMs: at ?? i * 20, completeMs: until ?? (at ?? i * 20) + 10, ...o }));
}
type Extra = Partial<Op> & { at?: number; until?: number };
const submit = (jobId: string, outcome: Op['outcome'], extra: Extra = {}) => ({
  process: 'c1',
  type: 'submit' as const,
  jobId,
  variant: `${jobId}-a`,
  outcome,
  ...(outcome === 'ok' ? { created: true } : outcome === 'unknown' ? { error: 'UNAVAILABLE' } : {}),
  ...extra,
});
const view = (jobId: string, state: string, name = `${jobId}-a`): JobView => ({ jobId, state, name });
const get = (jobId: string, state: string | undefined, extra: Extra = {}) => ({
  process: 'c2',
  type: 'get' as const,
  jobId,
  ...(state ? { outcome: 'ok' as const, job: view(jobId, state) } : { outcome: 'fail' as const, error: 'NOT_FOUND' }),
  ...extra,
});
const kill = (jobId: string, outcome: Op['outcome'], state?: string) => ({
  process: 'c3',
  type: 'kill' as const,
  jobId,
  outcome,
  ...(outcome === 'ok' ? { job: view(jobId, state ?? K) } : outcome === 'fail' ? { error: 'NOT_FOUND' } : { error: 'DEADLINE_EXCEEDED' }),
});
const list = (...jobs: JobView[]) => ({ process: 'c4', type: 'list' as const, jobId: '', outcome: 'ok' as const, jobs });
const final = (jobs: JobView[], extra: Partial<FinalState> = {}): FinalState => ({ jobs, workers: [], daemonExits: [], ...extra });

function kinds(ops: Op[], f: FinalState): AnomalyKind[] {
  return checkHistory(ops, f).anomalies.map((a) => a.kind);
}

describe('history checker', () => {
  it('passes a clean history: acknowledged, unknown and refused submits, reads, kills', () => {
    const ops = history(
      submit('j1', 'ok'),
      submit('j2', 'unknown'),
      submit('j3', 'unknown'),
      submit('j1', 'ok', { created: false }),
      submit('j1', 'fail', { variant: 'j1-b', error: 'ALREADY_EXISTS' }),
      get('j1', R),
      kill('j1', 'ok', K),
      list(view('j1', K), view('j2', S)),
      get('j3', undefined),
      kill('j4', 'fail'),
    );
    const res = checkHistory(ops, final([view('j1', K), view('j2', S)]));
    expect(res.anomalies).to.deep.equal([]);
    expect(res.acknowledged).to.equal(1);
    expect(res.endStates).to.deep.equal({ [K]: 1, [S]: 1 });
  });

  it('an acknowledged submit missing at the end is lost', () => {
    expect(kinds(history(submit('j1', 'ok')), final([]))).to.deep.equal(['lost']);
  });

  it('an unacknowledged submit may be missing', () => {
    expect(kinds(history(submit('j1', 'unknown'), submit('j2', 'fail', { error: 'INVALID_ARGUMENT' })), final([]))).to.deep.equal([]);
  });

  it('two submits of one id that both created it are a duplicate', () => {
    expect(kinds(history(submit('j1', 'ok'), submit('j1', 'ok')), final([view('j1', S)]))).to.deep.equal(['duplicated']);
  });

  it('an id listed twice is a duplicate', () => {
    expect(kinds(history(submit('j1', 'ok')), final([view('j1', S), view('j1', S)]))).to.deep.equal(['duplicated']);
    expect(kinds(history(submit('j1', 'ok'), list(view('j1', R), view('j1', R))), final([view('j1', S)]))).to.deep.equal(['duplicated']);
  });

  it('a job holding another spec than the acknowledged submit sent is a duplicate', () => {
    const ops = history(submit('j1', 'ok'), submit('j1', 'unknown', { variant: 'j1-b' }));
    expect(kinds(ops, final([view('j1', S, 'j1-b')]))).to.deep.equal(['duplicated']);
  });

  it('a job no client sent is a phantom', () => {
    expect(kinds(history(submit('j1', 'ok')), final([view('j1', S), view('x9', S)]))).to.deep.equal(['phantom']);
    expect(kinds(history(list(view('x9', R))), final([]))).to.deep.equal(['phantom']);
  });

  it('a job whose spec only a refused submit sent is a phantom', () => {
    const ops = history(submit('j1', 'fail', { error: 'INVALID_ARGUMENT' }));
    expect(kinds(ops, final([view('j1', S)]))).to.deep.equal(['phantom']);
  });

  it('a job shown and then NOT_FOUND to a later get has vanished', () => {
    const ops = history(submit('j1', 'unknown'), get('j1', R), get('j1', undefined));
    expect(kinds(ops, final([view('j1', S)]))).to.deep.equal(['vanished']);
  });

  it("a job shown by a watch's first record and then NOT_FOUND has vanished", () => {
    const watch = { ...get('j1', R), type: 'watch' as const };
    const ops = history(submit('j1', 'unknown'), watch, get('j1', undefined));
    expect(kinds(ops, final([view('j1', S)]))).to.deep.equal(['vanished']);
  });

  it('a job left out of a list invoked after it was acknowledged has vanished', () => {
    const ops = history(submit('j1', 'ok'), list());
    expect(kinds(ops, final([view('j1', S)]))).to.deep.equal(['vanished']);
  });

  it('a read concurrent with the acknowledging submit may miss the job', () => {
    const ops = history(submit('j1', 'ok', { at: 0, until: 100 }), get('j1', undefined, { at: 50, until: 60 }));
    expect(kinds(ops, final([view('j1', S)]))).to.deep.equal([]);
  });

  it('a job shown by a read (not acknowledged to its submitter) and missing at the end has vanished', () => {
    expect(kinds(history(submit('j1', 'unknown'), get('j1', R)), final([]))).to.deep.equal(['vanished']);
  });

  it('a terminal state shown, then another state, is a regression', () => {
    expect(kinds(history(submit('j1', 'ok'), get('j1', S), get('j1', R)), final([view('j1', S)]))).to.deep.equal(['regressed']);
    expect(kinds(history(submit('j1', 'ok'), kill('j1', 'ok', K)), final([view('j1', S)]))).to.deep.equal(['regressed']);
  });

  it('a killed job that no kill may have reached ends wrong', () => {
    expect(kinds(history(submit('j1', 'unknown'), kill('j1', 'fail')), final([view('j1', K)]))).to.deep.equal(['wrongEnd']);
    // A kill refused NOT_FOUND after the submit was acknowledged: the job vanished, too.
    expect(kinds(history(submit('j1', 'ok'), kill('j1', 'fail')), final([view('j1', K)]))).to.deep.equal(['vanished', 'wrongEnd']);
    expect(kinds(history(submit('j1', 'ok'), kill('j1', 'unknown')), final([view('j1', K)]))).to.deep.equal([]);
  });

  it('a kill acknowledged while the job ran must end it killed', () => {
    expect(kinds(history(submit('j1', 'ok'), kill('j1', 'ok', R)), final([view('j1', S)]))).to.deep.equal(['wrongEnd']);
    // Acknowledged after the job had succeeded: it stays succeeded.
    expect(kinds(history(submit('j1', 'ok'), kill('j1', 'ok', S)), final([view('j1', S)]))).to.deep.equal([]);
  });

  it('a failed job and a job still running at the end are reported', () => {
    expect(kinds(history(submit('j1', 'ok')), final([view('j1', 'JOB_STATE_FAILED')]))).to.deep.equal(['failed']);
    expect(kinds(history(submit('j1', 'ok')), final([view('j1', R)]))).to.deep.equal(['unfinished']);
  });

  it('a worker of a killed job that still runs is an orphan (once, whoever saw it)', () => {
    const ops = history(submit('j1', 'ok'), kill('j1', 'ok', K), submit('j2', 'ok'));
    const f = final([view('j1', K), view('j2', R)], {
      workers: [
        { jobId: 'j1', node: 'node-1', pid: 42, source: 'agent', what: 'worker t.0' },
        { jobId: 'j1', node: 'node-1', pid: 42, source: 'process', what: 'sleep 2' },
        { jobId: 'j2', node: 'node-2', pid: 43, source: 'agent', what: 'worker t.0' },
      ],
    });
    const res = checkHistory(ops, f);
    // j2 still runs, so its worker is no orphan; it is unfinished.
    expect(res.anomalies.map((a) => [a.kind, a.jobId])).to.deep.equal([
      ['unfinished', 'j2'],
      ['orphanWorker', 'j1'],
    ]);
  });

  it('a daemon that exited is reported', () => {
    const f = final([], { daemonExits: [{ daemon: 'agent node-1', pid: 7, code: 1, signal: null, atMs: 5 }] });
    expect(kinds([], f)).to.deep.equal(['daemonExit']);
  });

  it('classifies failures: definite refusals fail, everything else is unknown', () => {
    expect(classifyFailure(new FuxiError('ALREADY_EXISTS', 'x')).outcome).to.equal('fail');
    expect(classifyFailure(new FuxiError('NOT_FOUND', 'x')).outcome).to.equal('fail');
    expect(classifyFailure(new FuxiError('INVALID_ARGUMENT', 'x')).outcome).to.equal('fail');
    expect(classifyFailure(new FuxiError('RESOURCE_EXHAUSTED', 'etcd is out of space')).outcome).to.equal('fail');
    expect(classifyFailure(new FuxiError('UNAVAILABLE', 'x')).outcome).to.equal('unknown');
    expect(classifyFailure(new FuxiError('DEADLINE_EXCEEDED', 'x')).outcome).to.equal('unknown');
    expect(classifyFailure(new FuxiError('INTERNAL', 'x')).outcome).to.equal('unknown');
    expect(classifyFailure(new Error('socket hang up')).outcome).to.equal('unknown');
  });

  it('the recorder records invoke and completion times, outcomes and a timeout as unknown', async () => {
    let t = 0;
    const h = new HistoryRecorder(() => (t += 5), 50);
    const a = await h.record({ process: 'c1', type: 'submit', jobId: 'j1', variant: 'v' }, async () => ({ created: true }));
    const b = await h.record({ process: 'c1', type: 'get', jobId: 'j1' }, async () => {
      throw new FuxiError('NOT_FOUND', 'no job j1');
    });
    const c = await h.record({ process: 'c1', type: 'kill', jobId: 'j1' }, () => new Promise(() => undefined));
    expect([a.outcome, a.created, a.invokeMs, a.completeMs]).to.deep.equal(['ok', true, 5, 10]);
    expect([b.outcome, b.error]).to.deep.equal(['fail', 'NOT_FOUND']);
    expect([c.outcome, c.error]).to.deep.equal(['unknown', 'TIMEOUT']);
    expect(h.counts()).to.deep.include({ operations: 3, ok: 1, fail: 1, unknown: 1 });
  });

  it("the recorder records a batch as one op per job with the call's times, each job's own outcome, and the call's failure for all", async () => {
    let t = 0;
    const h = new HistoryRecorder(() => (t += 5), 50);
    const jobs = [
      { process: 'c1', type: 'submit' as const, jobId: 'j1', variant: 'j1-a' },
      { process: 'c1', type: 'submit' as const, jobId: 'j2', variant: 'j2-b' },
    ];
    const [a, b] = await h.recordMany(jobs, async () => [{ created: true }, new FuxiError('ALREADY_EXISTS', 'another spec')]);
    expect([a!.index, a!.outcome, a!.created, a!.batch, a!.invokeMs, a!.completeMs]).to.deep.equal([0, 'ok', true, true, 5, 10]);
    expect([b!.index, b!.outcome, b!.error, b!.invokeMs, b!.completeMs]).to.deep.equal([1, 'fail', 'ALREADY_EXISTS', 5, 10]);
    const failed = await h.recordMany(jobs, async () => {
      throw new FuxiError('UNAVAILABLE', 'no leader');
    });
    expect(failed.map((o) => [o.index, o.outcome, o.error])).to.deep.equal([
      [2, 'unknown', 'UNAVAILABLE'],
      [3, 'unknown', 'UNAVAILABLE'],
    ]);
    expect(h.counts().byType).to.deep.equal({ submitBatched: { ok: 1, fail: 1, unknown: 2 } });
    // A batch acknowledged, then one of its jobs missing at the end: lost, as for a single submit.
    expect(kinds(h.ops.slice(0, 1), final([]))).to.deep.equal(['lost']);
  });
});
