/**
 * The live index (`CoreState.live`): after any sequence of plans, grant messages, spawns, spawn
 * failures, exits, stops, ticks (timeouts, retention) and a restore from the checkpoint, it holds
 * exactly the workers of the registry that have not ended, in the registry's (acceptance) order.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { isWorkerTerminal, nullLogger, res, type Resource } from '@fuxi/common';
import { CoreState } from '../core-state.js';
import { updateGrants } from '../grants.js';
import { spawnFailed, workerExited, workerSpawned } from '../lifecycle.js';
import { durableState } from '../persistence.js';
import { startWorkers, stopWorkers } from '../plans.js';
import { summary } from '../queries.js';
import { restore } from '../restore.js';
import { tick } from '../retention.js';

const SLOT: Resource = res(1000, 1024);

type Op =
  | { kind: 'plan'; app: number; id: number }
  | { kind: 'grant'; app: number; slots: number }
  | { kind: 'spawned'; app: number; id: number }
  | { kind: 'spawnFailed'; app: number; id: number }
  | { kind: 'exited'; app: number; id: number; code: number }
  | { kind: 'stop'; app: number; id: number }
  | { kind: 'tick'; advance: number }
  | { kind: 'restore' };

const app = fc.integer({ min: 0, max: 1 });
const id = fc.integer({ min: 0, max: 3 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('plan' as const), app, id }),
  fc.record({ kind: fc.constant('grant' as const), app, slots: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('spawned' as const), app, id }),
  fc.record({ kind: fc.constant('spawnFailed' as const), app, id }),
  fc.record({ kind: fc.constant('exited' as const), app, id, code: fc.integer({ min: 0, max: 1 }) }),
  fc.record({ kind: fc.constant('stop' as const), app, id }),
  fc.record({ kind: fc.constant('tick' as const), advance: fc.integer({ min: 1, max: 400 }) }),
  fc.constant({ kind: 'restore' as const }),
);

function fresh(): CoreState {
  return new CoreState({ nodeId: 'n1', capacity: res(8000, 16384), pendingTimeoutMs: 500, finishedRetentionMs: 600, maxFinished: 5 }, nullLogger);
}

/** The index is the non-ended part of the registry, in the same order, and the summary agrees with it. */
function expectInStep(st: CoreState): void {
  const want = [...st.workers].filter(([, w]) => !isWorkerTerminal(w.state));
  expect([...st.live.keys()]).to.deep.equal(want.map(([k]) => k));
  for (const [k, w] of want) expect(st.live.get(k)).to.equal(w);
  const s = summary(st);
  expect(s.running + s.pending).to.equal(st.live.size);
  expect(s.finished).to.equal(st.workers.size - st.live.size);
}

describe('agent core live-worker index', () => {
  it('stays the non-ended workers of the registry, in acceptance order, whatever happens', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 60 }), (ops) => {
        let st = fresh();
        let now = 0;
        let seq = 0;
        const appId = (a: number) => `app-${a}`;
        for (const o of ops) {
          switch (o.kind) {
            case 'plan':
              startWorkers(
                st,
                {
                  appId: appId(o.app),
                  amAttempt: 1,
                  amAddress: 'am:1',
                  epoch: '0',
                  plans: [
                    {
                      workerId: `w${o.id}`,
                      suId: 'map',
                      task: 'map',
                      instance: o.id,
                      attempt: 1,
                      command: { argv: ['true'], env: {}, cwd: '' },
                      resource: SLOT,
                    },
                  ],
                },
                now,
              );
              break;
            case 'grant':
              updateGrants(
                st,
                { epoch: '1', seq: String(++seq), full: false, grants: [{ appId: appId(o.app), suId: 'map', slots: o.slots, resource: SLOT }] },
                now,
              );
              break;
            case 'spawned':
              workerSpawned(st, appId(o.app), `w${o.id}`, 1000 + o.id, 't', now, 'boot');
              break;
            case 'spawnFailed':
              spawnFailed(st, appId(o.app), `w${o.id}`, 'no such file', now);
              break;
            case 'exited':
              workerExited(st, appId(o.app), `w${o.id}`, o.code, null, now, '');
              break;
            case 'stop':
              stopWorkers(st, { appId: appId(o.app), amAttempt: 1, epoch: '0', workerIds: [`w${o.id}`], reason: 'test' }, now);
              break;
            case 'tick':
              now += o.advance;
              tick(st, now);
              break;
            case 'restore': {
              const saved = durableState(st);
              st = fresh();
              // Every spawned worker survived the restart; a STARTING one without a pid did not.
              restore(st, saved, (w) => (w.pid > 0 ? { kind: 'alive', pid: w.pid, startTime: 't', bootId: 'boot' } : { kind: 'gone' }), now);
              break;
            }
          }
          expectInStep(st);
        }
      }),
      { numRuns: 300 },
    );
  });
});
