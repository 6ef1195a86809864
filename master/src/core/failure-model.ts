/**
 * The failure model: an L2-regularised logistic regression over the attempt features of
 * attempt-history.ts (plus one product term: memory-pressure failures times memory allocated),
 * trained by mini-batch gradient descent over standardised features.
 *
 * Why logistic regression, written here, and not a forest from npm: its output is a probability
 * (the decision rule in atlas-decision.ts weighs costs by it, so it must be calibrated, which a
 * vote share of trees is not without extra work); the features are rates that act monotonically;
 * it trains on 20,000 samples in milliseconds off the scheduling path and predicts in a dozen
 * multiplications per host; and its only randomness is the sample order, drawn from the seeded
 * generator passed in, so the same samples and seed always give the same weights.
 *
 * Pure: no clock, no Math.random.
 */
import { FEATURE_COUNT } from './attempt-history.js';

/** What the model trains on: features (attempt-history.ts) and the outcome (1: failed). */
export interface Labeled {
  x: readonly number[];
  y: number;
}

export interface TrainConfig {
  epochs: number;
  batch: number;
  learningRate: number;
  l2: number;
  /** Fewer samples than this (or only one class): no model. */
  minSamples: number;
}

export const DEFAULT_TRAIN_CONFIG: TrainConfig = { epochs: 12, batch: 64, learningRate: 0.3, l2: 1e-4, minSamples: 200 };

export interface FailureModel {
  /** Weights over the expanded, standardised features; `bias` apart. */
  weights: number[];
  bias: number;
  mean: number[];
  std: number[];
  /** Samples it was trained on, and their failure rate (its prior). */
  trainedOn: number;
  baseRate: number;
}

/** The features the model sees: the history's, then hostPressureFailRate x memAllocated. */
export function expand(x: readonly number[]): number[] {
  const out = x.slice(0, FEATURE_COUNT);
  while (out.length < FEATURE_COUNT) out.push(0);
  out.push((x[1] ?? 0) * (x[4] ?? 0));
  return out;
}

/**
 * Trains on `samples` (the history's training set); `rand` is a seeded generator in [0, 1) that
 * orders the samples. Undefined when there are too few samples or one class only.
 */
export function trainModel(samples: readonly Labeled[], rand: () => number, config: TrainConfig = DEFAULT_TRAIN_CONFIG): FailureModel | undefined {
  const n = samples.length;
  if (n < config.minSamples) return undefined;
  let positives = 0;
  for (const s of samples) positives += s.y;
  if (positives === 0 || positives === n) return undefined;

  const xs = samples.map((s) => expand(s.x));
  const d = xs[0]!.length;
  const mean = new Array<number>(d).fill(0);
  const std = new Array<number>(d).fill(0);
  for (const x of xs) for (let j = 0; j < d; j++) mean[j]! += x[j]! / n;
  for (const x of xs) for (let j = 0; j < d; j++) std[j]! += (x[j]! - mean[j]!) ** 2 / n;
  // A feature that does not vary (to rounding) is left unscaled: dividing by a rounding error
  // would turn any later difference into an enormous input.
  for (let j = 0; j < d; j++) std[j] = Math.sqrt(std[j]!) > 1e-6 ? Math.sqrt(std[j]!) : 1;
  const zs = xs.map((x) => x.map((v, j) => (v - mean[j]!) / std[j]!));

  const w = new Array<number>(d).fill(0);
  const baseRate = positives / n;
  let b = Math.log(baseRate / (1 - baseRate));
  const order = Array.from({ length: n }, (_, i) => i);
  const grad = new Array<number>(d).fill(0);
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    shuffle(order, rand);
    const rate = config.learningRate / (1 + epoch * 0.5);
    for (let start = 0; start < n; start += config.batch) {
      const end = Math.min(n, start + config.batch);
      grad.fill(0);
      let gb = 0;
      for (let k = start; k < end; k++) {
        const i = order[k]!;
        const z = zs[i]!;
        const err = sigmoid(dot(w, z) + b) - samples[i]!.y;
        for (let j = 0; j < d; j++) grad[j]! += err * z[j]!;
        gb += err;
      }
      const m = end - start;
      for (let j = 0; j < d; j++) w[j] = w[j]! - rate * (grad[j]! / m + config.l2 * w[j]!);
      b -= (rate * gb) / m;
    }
  }
  return { weights: w, bias: b, mean, std, trainedOn: n, baseRate };
}

/** The predicted probability that an attempt with features `x` (attempt-history.ts) fails. */
export function predictFailure(model: FailureModel, x: readonly number[]): number {
  const e = expand(x);
  let s = model.bias;
  for (let j = 0; j < e.length; j++) s += (model.weights[j] ?? 0) * ((e[j]! - (model.mean[j] ?? 0)) / (model.std[j] ?? 1));
  return sigmoid(s);
}

/** Mean log loss and accuracy at 0.5 of `model` over `samples` (for the bench and tests). */
export function scoreModel(model: FailureModel, samples: readonly Labeled[]): { logLoss: number; accuracy: number } {
  let loss = 0;
  let right = 0;
  for (const s of samples) {
    const p = Math.min(1 - 1e-9, Math.max(1e-9, predictFailure(model, s.x)));
    loss -= s.y === 1 ? Math.log(p) : Math.log(1 - p);
    if ((p >= 0.5 ? 1 : 0) === s.y) right++;
  }
  const n = Math.max(1, samples.length);
  return { logLoss: loss / n, accuracy: right / n };
}

function sigmoid(v: number): number {
  return v >= 0 ? 1 / (1 + Math.exp(-v)) : Math.exp(v) / (1 + Math.exp(v));
}

function dot(a: readonly number[], b: readonly number[]): number {
  let s = 0;
  for (let j = 0; j < a.length; j++) s += a[j]! * b[j]!;
  return s;
}

/** Fisher-Yates with the given generator. */
function shuffle(a: number[], rand: () => number): void {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
}
