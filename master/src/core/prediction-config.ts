/**
 * Master config `failurePrediction`: whether the master predicts attempt failures and acts on them,
 * and the numbers of each part (attempt-history.ts, failure-model.ts, blacklist.ts,
 * atlas-decision.ts). Every key is optional; a bad one is named in the error
 * (`failurePrediction.blockAt`), as `failureDetector`'s are.
 */
import { InvalidArgumentError } from '@fuxi/common';
import { DEFAULT_DECISION_CONFIG, type DecisionConfig } from './atlas-decision.js';
import { DEFAULT_HISTORY_CONFIG, type HistoryConfig } from './attempt-history.js';
import { DEFAULT_BLACKLIST_CONFIG, type BlacklistConfig } from './blacklist.js';
import { DEFAULT_TRAIN_CONFIG, type TrainConfig } from './failure-model.js';

export interface PredictionConfig {
  enabled: boolean;
  /** Retrain after this many new attempt ends, at most every `trainIntervalMs`. */
  retrainAfter: number;
  trainIntervalMs: number;
  /** How often running attempts are weighed (attempt-verdicts.ts). */
  decideIntervalMs: number;
  /** Seed of the training's generator (sample order). */
  seed: number;
  history: HistoryConfig;
  train: TrainConfig;
  blacklist: BlacklistConfig;
  decision: DecisionConfig;
}

export const DEFAULT_PREDICTION_CONFIG: PredictionConfig = {
  enabled: true,
  retrainAfter: 200,
  trainIntervalMs: 60_000,
  decideIntervalMs: 10_000,
  seed: 1,
  history: DEFAULT_HISTORY_CONFIG,
  train: DEFAULT_TRAIN_CONFIG,
  blacklist: DEFAULT_BLACKLIST_CONFIG,
  decision: DEFAULT_DECISION_CONFIG,
};

type Check = 'positive' | 'nonNegative' | 'fraction' | 'positiveInt' | 'int';

/** Key -> where it lives and what it must be. */
const KEYS: Record<string, [part: 'top' | 'history' | 'train' | 'blacklist' | 'decision', check: Check]> = {
  retrainAfter: ['top', 'positiveInt'],
  trainIntervalMs: ['top', 'positiveInt'],
  decideIntervalMs: ['top', 'positiveInt'],
  seed: ['top', 'int'],
  historyCapacity: ['history', 'positiveInt'],
  taskFaultRate: ['history', 'fraction'],
  windowMs: ['history', 'positiveInt'],
  pressureAt: ['history', 'fraction'],
  epochs: ['train', 'positiveInt'],
  batch: ['train', 'positiveInt'],
  learningRate: ['train', 'positive'],
  l2: ['train', 'nonNegative'],
  minSamples: ['train', 'positiveInt'],
  grayAt: ['blacklist', 'fraction'],
  blockAt: ['blacklist', 'fraction'],
  halfLifeMs: ['blacklist', 'positiveInt'],
  jobBlockFailures: ['blacklist', 'positiveInt'],
  maxBlockedFraction: ['blacklist', 'fraction'],
  pressureCapAt: ['blacklist', 'fraction'],
  failurePenalty: ['decision', 'nonNegative'],
  reschedulePenalty: ['decision', 'nonNegative'],
  killPenalty: ['decision', 'nonNegative'],
  slotSecondCost: ['decision', 'nonNegative'],
};

const RULE: Record<Check, [ok: (n: number) => boolean, says: string]> = {
  positive: [(n) => n > 0, 'a number greater than 0'],
  nonNegative: [(n) => n >= 0, 'a number >= 0'],
  fraction: [(n) => n >= 0 && n <= 1, 'a number from 0 to 1'],
  positiveInt: [(n) => Number.isInteger(n) && n > 0, 'an integer greater than 0'],
  int: [(n) => Number.isInteger(n), 'an integer'],
};

/** Parses `failurePrediction` (an object, or `false`/`true` for off/on with the defaults). */
export function parsePredictionConfig(raw: unknown, field = 'failurePrediction'): PredictionConfig {
  if (raw === false || raw === 'off' || raw === 'false') return { ...DEFAULT_PREDICTION_CONFIG, enabled: false };
  if (raw === true || raw === 'on' || raw === 'true' || raw === undefined || raw === null) return DEFAULT_PREDICTION_CONFIG;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new InvalidArgumentError(field, 'must be true, false or an object such as {blockAt: 0.5}');
  const out: PredictionConfig = {
    ...DEFAULT_PREDICTION_CONFIG,
    history: { ...DEFAULT_HISTORY_CONFIG },
    train: { ...DEFAULT_TRAIN_CONFIG },
    blacklist: { ...DEFAULT_BLACKLIST_CONFIG },
    decision: { ...DEFAULT_DECISION_CONFIG },
  };
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key === 'enabled') {
      if (typeof value !== 'boolean') throw new InvalidArgumentError(`${field}.enabled`, 'must be true or false');
      out.enabled = value;
      continue;
    }
    const spec = KEYS[key];
    if (spec === undefined) throw new InvalidArgumentError(`${field}.${key}`, `is not a failure prediction setting (enabled, ${Object.keys(KEYS).join(', ')})`);
    const [part, check] = spec;
    const [ok, says] = RULE[check];
    if (typeof value !== 'number' || !Number.isFinite(value) || !ok(value))
      throw new InvalidArgumentError(`${field}.${key}`, `must be ${says}, got ${JSON.stringify(value)}`);
    const name = key === 'historyCapacity' ? 'capacity' : key;
    const target = (part === 'top' ? out : out[part]) as unknown as Record<string, number>;
    target[name] = value;
  }
  if (out.blacklist.grayAt > out.blacklist.blockAt) throw new InvalidArgumentError(`${field}.grayAt`, `must not exceed blockAt (${out.blacklist.blockAt})`);
  return out;
}
