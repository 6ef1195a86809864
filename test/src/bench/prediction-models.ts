/**
 * Benchmark (not a test): the failure model (master/src/core/failure-model.ts, a logistic
 * regression) against a random forest (`ml-random-forest`) on the same attempt features.
 *
 * Reads training sets written by the discrete-event bench (`prediction.js --samples FILE`: every
 * attempt end of the run with prediction on, its features as at its start and its outcome), splits
 * each in time (the first 70 % to train, the last 30 % to test: the model always predicts attempts
 * after those it learned from) and scores both on the test part: log loss and Brier score (the
 * decision rule weighs costs by the probability, so calibration matters), ROC AUC (ranking: which
 * hosts to list first), accuracy at 0.5, and training time. Writes
 * bench-results/prediction-models.json.
 *
 *   node test/dist/bench/prediction.js --seed 3 --samples /tmp/s3.json
 *   node test/dist/bench/prediction-models.js /tmp/s3.json [/tmp/s7.json ...]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RandomForestClassifier } from 'ml-random-forest';
import { seededRandom } from '@fuxi/common';
import { REPO_ROOT } from '@fuxi/deploy';
import { predictFailure, trainModel, DEFAULT_TRAIN_CONFIG } from '@fuxi/master/core/failure-model';

interface Labeled {
  x: number[];
  y: number;
}

interface Score {
  logLoss: number;
  brier: number;
  auc: number;
  accuracy: number;
  trainMs: number;
}

function score(ps: readonly number[], test: readonly Labeled[], trainMs: number): Score {
  let loss = 0;
  let brier = 0;
  let right = 0;
  test.forEach((s, i) => {
    const p = Math.min(1 - 1e-6, Math.max(1e-6, ps[i]!));
    loss -= s.y === 1 ? Math.log(p) : Math.log(1 - p);
    brier += (p - s.y) ** 2;
    if ((p >= 0.5 ? 1 : 0) === s.y) right++;
  });
  const n = Math.max(1, test.length);
  return { logLoss: round(loss / n), brier: round(brier / n), auc: round(auc(ps, test)), accuracy: round(right / n), trainMs: Math.round(trainMs) };
}

/** ROC AUC by ranks (ties share their mean rank). */
function auc(ps: readonly number[], test: readonly Labeled[]): number {
  const order = ps.map((p, i) => ({ p, y: test[i]!.y })).sort((a, b) => a.p - b.p);
  let rankSum = 0;
  let pos = 0;
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j < order.length && order[j]!.p === order[i]!.p) j++;
    const mean = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (order[k]!.y === 1) ((rankSum += mean), pos++);
    i = j;
  }
  const neg = order.length - pos;
  return pos === 0 || neg === 0 ? 0.5 : (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}

function compare(file: string): { file: string; train: number; test: number; failRate: number; logistic: Score; forest: Score } {
  const all = JSON.parse(readFileSync(file, 'utf8')) as Array<Labeled & { t: number }>;
  all.sort((a, b) => a.t - b.t);
  const cut = Math.floor(all.length * 0.7);
  const train = all.slice(0, cut);
  const test = all.slice(cut);

  let t0 = performance.now();
  const lr = trainModel(train, seededRandom(1), { ...DEFAULT_TRAIN_CONFIG, minSamples: 1 });
  const lrMs = performance.now() - t0;
  if (lr === undefined) throw new Error(`${file}: one class only`);
  const logistic = score(
    test.map((s) => predictFailure(lr, s.x)),
    test,
    lrMs,
  );

  t0 = performance.now();
  const rf = new RandomForestClassifier({ nEstimators: 50, maxFeatures: 0.7, seed: 1, treeOptions: { maxDepth: 8, minNumSamples: 10 } });
  rf.train(
    train.map((s) => s.x),
    train.map((s) => s.y),
  );
  const rfMs = performance.now() - t0;
  const forest = score(
    rf.predictProbability(
      test.map((s) => s.x),
      1,
    ),
    test,
    rfMs,
  );
  const failRate = round(all.reduce((s, x) => s + x.y, 0) / Math.max(1, all.length));
  return { file, train: train.length, test: test.length, failRate, logistic, forest };
}

const files = process.argv.slice(2);
if (files.length === 0) {
  process.stderr.write('usage: prediction-models.js SAMPLES.json... (from prediction.js --samples)\n');
  process.exit(2);
}
const results = files.map(compare);
for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
const out = join(REPO_ROOT, 'bench-results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'prediction-models.json'), JSON.stringify(results, null, 2) + '\n');
