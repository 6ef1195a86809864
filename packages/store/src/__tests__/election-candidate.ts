/**
 * A stand-alone election candidate for tests that kill a leader with SIGKILL (no resign, no revoke).
 * Usage: node election-candidate.js <endpoint> <prefix> <value> <ttlSec>
 * Prints one JSON line per event: {"event":"leader","epoch":"..."}, {"event":"stepDown",...}.
 */
import { EtcdStore } from '../etcd-store.js';
import { LeaderElection } from '../election.js';

const [endpoint, prefix, value, ttl] = process.argv.slice(2);
if (!endpoint || !prefix || !value) {
  process.stderr.write('usage: election-candidate <endpoint> <prefix> <value> [ttlSec]\n');
  process.exit(2);
}
const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
const store = await EtcdStore.open({ endpoints: [endpoint], prefix, requestTimeoutMs: 1000 });
const election = new LeaderElection(store.coordination(), { ttlSec: Number(ttl ?? 2) });
election.on('leader', (l) => out({ event: 'leader', epoch: l.epoch, leaseId: l.leaseId }));
election.on('stepDown', (s) => out({ event: 'stepDown', reason: s.reason, epoch: s.leadership.epoch }));
election.on('campaignError', (f) => out({ event: 'campaignError', attempt: f.attempt, error: f.error.message }));
election.campaign(value);
process.on('SIGTERM', () => {
  void election
    .close()
    .then(() => store.close())
    .then(() => process.exit(0));
});
// keep the process alive (the election's timers are unref'd)
setInterval(() => undefined, 1 << 30);
