import { expect } from 'chai';
import { parsePredictionConfig } from '../../core/prediction-config.js';
import { applyConfig, defaultConfig, resolvedDetector } from '../config.js';

describe('master config: failureDetector', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('defaults to bertier, with agentTimingOutMs until it has learnt; fixed takes agentTimingOutMs', () => {
    expect(resolvedDetector(applyConfig(base, { agentTimingOutMs: 4000 }, 'flags'))).to.deep.include({ kind: 'bertier', bootstrapMs: 4000 });
    expect(resolvedDetector(applyConfig(base, { agentTimingOutMs: 4000, failureDetector: { kind: 'fixed' } }, 'flags'))).to.deep.equal({
      kind: 'fixed',
      timeoutMs: 4000,
    });
  });

  it('takes a kind with some parameters; the rest are the defaults, agentTimingOutMs the bootstrap', () => {
    const cfg = applyConfig(base, { failureDetector: { kind: 'phi', threshold: 10 }, agentTimingOutMs: 5000 }, 'master.yaml');
    expect(resolvedDetector(cfg)).to.deep.include({ kind: 'phi', threshold: 10, minStdMs: 50, bootstrapMs: 5000 });
    // Flags applied later keep the file's detector.
    expect(resolvedDetector(applyConfig(cfg, { logLevel: 'warn' }, 'flags'))).to.deep.include({ kind: 'phi', threshold: 10 });
  });

  it('names the file, the field and the reason of a bad value', () => {
    expect(() => applyConfig(base, { failureDetector: { kind: 'psychic' } }, 'master.yaml')).to.throw(
      /master\.yaml: failureDetector\.kind: must be one of fixed, chen, bertier, phi, sfd/,
    );
    expect(() => applyConfig(base, { failureDetector: { kind: 'sfd', alphaMs: 3 } }, 'master.yaml')).to.throw(
      /failureDetector\.alphaMs: is not a parameter of the sfd detector/,
    );
  });
});

describe('master config: probe targets', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('defaults to every peer up to 64 agents, then 16 on the ring and up to 64 in all', () => {
    expect(base).to.include({ probeAllUpTo: 64, probeSample: 16, probeMaxTargets: 64 });
    expect(applyConfig(base, { probeAllUpTo: '200', probeSample: 8, probeMaxTargets: 32 }, 'flags')).to.include({
      probeAllUpTo: 200,
      probeSample: 8,
      probeMaxTargets: 32,
    });
  });

  it('names the field of a bad value', () => {
    expect(() => applyConfig(base, { probeAllUpTo: 0 }, 'master.yaml')).to.throw(/master\.yaml: probeAllUpTo: must be a positive integer/);
    expect(() => applyConfig(base, { probeSample: 'some' }, 'flags')).to.throw(/^probeSample: must be a positive integer/);
    expect(() => applyConfig(base, { probeSample: 20, probeMaxTargets: 10 }, 'flags')).to.throw(/^probeMaxTargets: must be at least probeSample \(20\)/);
  });
});

describe('master config: connectivityAware', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('defaults to true; takes true or false from a file or a flag', () => {
    expect(base.connectivityAware).to.equal(true);
    expect(applyConfig(base, { connectivityAware: false }, 'master.yaml').connectivityAware).to.equal(false);
    expect(applyConfig(base, { connectivityAware: 'false' }, 'flags').connectivityAware).to.equal(false);
    expect(applyConfig(applyConfig(base, { connectivityAware: false }, 'master.yaml'), { connectivityAware: 'true' }, 'flags').connectivityAware).to.equal(
      true,
    );
  });

  it('names the key and the reason of a bad value', () => {
    expect(() => applyConfig(base, { connectivityAware: 'sometimes' }, 'master.yaml')).to.throw(
      /master\.yaml: connectivityAware: must be true \(place by the hosts' connectivity\) or false \(ignore it\), got "sometimes"/,
    );
  });
});

describe('master config: metricsListen', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('is off by default; takes host:port from a file or a flag', () => {
    expect(base.metricsListen).to.equal('');
    expect(applyConfig(base, { metricsListen: '127.0.0.1:9100' }, 'master.yaml').metricsListen).to.equal('127.0.0.1:9100');
    expect(applyConfig(base, { metricsListen: '0.0.0.0:0' }, 'flags').metricsListen).to.equal('0.0.0.0:0');
  });

  it('names the key of a bad value', () => {
    expect(() => applyConfig(base, { metricsListen: '9100' }, 'master.yaml')).to.throw(/master\.yaml: metricsListen: must be host:port/);
    expect(() => applyConfig(base, { metricsListen: 'h:99999' }, 'flags')).to.throw(/metricsListen: port must be at most 65535/);
  });
});

describe('master config: failurePrediction', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('is on by default and takes an object or false', () => {
    expect(parsePredictionConfig(base.failurePrediction).enabled).to.equal(true);
    expect(parsePredictionConfig(applyConfig(base, { failurePrediction: false }, 'flags').failurePrediction).enabled).to.equal(false);
    const cfg = applyConfig(base, { failurePrediction: { blockAt: 0.6, killPenalty: 120 } }, 'master.yaml');
    expect(parsePredictionConfig(cfg.failurePrediction).blacklist.blockAt).to.equal(0.6);
  });

  it('names the key that is wrong, with its source', () => {
    expect(() => applyConfig(base, { failurePrediction: { reschedulePenalty: -3 } }, 'master.yaml')).to.throw(
      /master\.yaml: failurePrediction\.reschedulePenalty: must be a number >= 0, got -3/,
    );
  });
});

describe('master config: tokensFile', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('has no tokens file by default; takes one from a file or flags', () => {
    expect(base.tokensFile).to.equal('');
    expect(applyConfig(base, { tokensFile: '/etc/fuxi/tokens.csv' }, 'flags').tokensFile).to.equal('/etc/fuxi/tokens.csv');
  });
});

describe('master config: tls and insecure', () => {
  const base = defaultConfig([]);
  const tls = { ca: '/pki/ca.crt', cert: '/pki/master.crt', key: '/pki/master.key' };

  it('takes tls from the file and --tls-* flags over it; insecure: true opts out', () => {
    const fromFile = applyConfig(base, { tls }, 'master.yaml');
    expect(fromFile.tls).to.deep.equal(tls);
    expect(applyConfig(fromFile, { tlsKey: '/other.key' }, 'flags').tls).to.deep.equal({ ...tls, key: '/other.key' });
    expect(applyConfig(base, { tlsCa: 'a', tlsCert: 'b', tlsKey: 'c' }, 'flags').tls).to.deep.equal({ ca: 'a', cert: 'b', key: 'c' });
    expect(applyConfig(base, { insecure: true }, 'master.yaml').insecure).to.equal(true);
    expect(base.insecure).to.equal(undefined);
    // Flags over the file: --insecure drops the file's tls, --tls-* the file's insecure.
    const plain = applyConfig(fromFile, { insecure: true }, 'flags');
    expect([plain.insecure, plain.tls]).to.deep.equal([true, undefined]);
    expect(applyConfig(applyConfig(base, { insecure: true }, 'master.yaml'), { tlsCa: 'a', tlsCert: 'b', tlsKey: 'c' }, 'flags').insecure).to.equal(false);
  });

  it('names the file and the field of a bad value', () => {
    expect(() => applyConfig(base, { tls: { ca: 'a', cert: 'b' } }, 'master.yaml')).to.throw(/^master\.yaml: tls\.key: must be the path of a PEM file/);
    expect(() => applyConfig(base, { tlsCa: 'a' }, 'flags')).to.throw(/^tls\.cert: must be the path of a PEM file/);
    expect(() => applyConfig(base, { insecure: 'maybe' }, 'master.yaml')).to.throw(/^master\.yaml: insecure: must be true or false/);
  });
});

describe('master config: external schedulers', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('stalls after 10 s by default, and has no fallback (jobs wait) unless one is set', () => {
    expect(base.externalSchedulerStallMs).to.equal(10_000);
    expect(base.externalSchedulerFallbackMs).to.equal(undefined);
    expect(applyConfig(base, { externalSchedulerStallMs: '3000', externalSchedulerFallbackMs: '0' }, 'flags')).to.include({
      externalSchedulerStallMs: 3000,
      externalSchedulerFallbackMs: 0,
    });
  });

  it('names the key of a bad value', () => {
    expect(() => applyConfig(base, { externalSchedulerFallbackMs: -1 }, 'master.yaml')).to.throw(/externalSchedulerFallbackMs: must be an integer >= 0/);
    expect(() => applyConfig(base, { externalSchedulerStallMs: 0 }, 'flags')).to.throw(/externalSchedulerStallMs: /);
  });
});

describe('master config: input limits', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it('has defaults a cluster can live with, and takes each key from a file or a flag', () => {
    expect([base.maxEnvBytes, base.maxEnvVars, base.maxInstancesPerJob, base.maxMessageBytes, base.submitRatePerSec, base.submitBurst]).to.deep.equal([
      65536,
      256,
      200_000,
      64 * 1024 * 1024,
      50,
      2000,
    ]);
    const c = applyConfig(
      base,
      { maxEnvBytes: '1024', maxEnvVars: 8, maxInstancesPerJob: 0, maxMessageBytes: '16Mi', submitRatePerSec: '5', submitBurst: 10 },
      'flags',
    );
    expect([c.maxEnvBytes, c.maxEnvVars, c.maxInstancesPerJob, c.maxMessageBytes, c.submitRatePerSec, c.submitBurst]).to.deep.equal([
      1024,
      8,
      0,
      16 * 1024 * 1024,
      5,
      10,
    ]);
  });

  it('names the key of a bad value', () => {
    for (const key of ['maxEnvBytes', 'maxEnvVars', 'maxInstancesPerJob', 'submitRatePerSec', 'submitBurst'])
      expect(() => applyConfig(base, { [key]: -1 }, 'master.yaml'), key).to.throw(new RegExp(`master\\.yaml: ${key}: must be an integer >= 0`));
    expect(() => applyConfig(base, { maxMessageBytes: '1Ki' }, 'flags')).to.throw(/maxMessageBytes: must be bytes from 65536 to 2Gi/);
  });
});

describe('master config: maxAmShare', () => {
  const base = defaultConfig(['fuxi-appmaster']);

  it("defaults to a tenth of the cluster (YARN's default) and takes a share up to 1", () => {
    expect(base.maxAmShare).to.equal(0.1);
    expect(applyConfig(base, { maxAmShare: 0.1 }, 'master.yaml').maxAmShare).to.equal(0.1);
    expect(applyConfig(base, { maxAmShare: '1' }, 'flags').maxAmShare).to.equal(1);
  });

  it('names the field and the reason of a bad value', () => {
    for (const bad of [0, -0.1, 1.5, 'half', null])
      expect(() => applyConfig(base, { maxAmShare: bad }, 'master.yaml')).to.throw(/master\.yaml: maxAmShare: must be a number above 0 and at most 1/);
  });
});
