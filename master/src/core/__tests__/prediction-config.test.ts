import { expect } from 'chai';
import { InvalidArgumentError } from '@fuxi/common';
import { DEFAULT_PREDICTION_CONFIG, parsePredictionConfig } from '../prediction-config.js';

function fieldOf(raw: unknown): string {
  try {
    parsePredictionConfig(raw);
  } catch (e) {
    if (e instanceof InvalidArgumentError) return e.field;
    throw e;
  }
  throw new Error('no error');
}

describe('failure prediction config', () => {
  it('defaults, switches off, and sets each part', () => {
    expect(parsePredictionConfig(undefined)).to.deep.equal(DEFAULT_PREDICTION_CONFIG);
    expect(parsePredictionConfig(false).enabled).to.equal(false);
    const c = parsePredictionConfig({ blockAt: 0.6, failurePenalty: 100, historyCapacity: 500, epochs: 3, retrainAfter: 10 });
    expect(c.blacklist.blockAt).to.equal(0.6);
    expect(c.decision.failurePenalty).to.equal(100);
    expect(c.history.capacity).to.equal(500);
    expect(c.train.epochs).to.equal(3);
    expect(c.retrainAfter).to.equal(10);
    expect(parsePredictionConfig({ decideIntervalMs: 2000 }).decideIntervalMs).to.equal(2000);
    expect(DEFAULT_PREDICTION_CONFIG.blacklist.blockAt).to.not.equal(0.6);
  });

  it('names the field that is wrong', () => {
    expect(fieldOf({ blockAt: 1.5 })).to.equal('failurePrediction.blockAt');
    expect(fieldOf({ killPenalty: -1 })).to.equal('failurePrediction.killPenalty');
    expect(fieldOf({ epochs: 2.5 })).to.equal('failurePrediction.epochs');
    expect(fieldOf({ blokAt: 0.5 })).to.equal('failurePrediction.blokAt');
    expect(fieldOf({ enabled: 'yes' })).to.equal('failurePrediction.enabled');
    expect(fieldOf({ grayAt: 0.8, blockAt: 0.5 })).to.equal('failurePrediction.grayAt');
    expect(fieldOf({ decideIntervalMs: 0 })).to.equal('failurePrediction.decideIntervalMs');
    expect(fieldOf(42)).to.equal('failurePrediction');
  });
});
