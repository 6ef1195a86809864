/**
 * The bench's external scheduler as a process of its own (as a real one is), so its event loop is
 * not the load generator's: `node external-main.js <master>`. Over IPC: `{ type: 'record', on }`
 * starts or stops the samples, `{ type: 'report' }` answers a BenchSchedulerReport, `{ type: 'stop' }`
 * ends it. It sends `{ type: 'registered' }` on each registration.
 */
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import { BenchScheduler, type BenchSchedulerReport } from './external.js';

const master = process.argv[2];
if (!master || !process.send) throw new Error('usage: node external-main.js <master host:port> (with an IPC channel)');
const send = (m: unknown) => process.send?.(m);
const sched = new BenchScheduler({ name: 'bench-ext', style: 'slot', masters: [master], insecure: true }); // the bench's master runs plaintext
const registered = setInterval(() => {
  if (sched.registrations > 0) {
    send({ type: 'registered' });
    clearInterval(registered);
  }
}, 20);
// A yardstick for the machine's load: the round trip of a call that does nothing (an empty Place on
// a channel of its own: a keepalive of an unknown registration), every 100 ms while recording.
const ping = connect(loadFuxiProto().SchedulerService, master);
const pings: number[] = [];
let pinger: NodeJS.Timeout | undefined;
process.on('message', (m: { type?: string; on?: boolean }) => {
  if (m.type === 'record') {
    sched.recording = m.on === true;
    clearInterval(pinger);
    if (sched.recording) {
      pinger = setInterval(() => {
        const t0 = performance.now();
        ping.Place({ name: 'bench-ping', epoch: '0', version: '0', placements: [] }).then(
          () => pings.push(performance.now() - t0),
          () => undefined,
        );
      }, 100);
    }
  } else if (m.type === 'report') {
    const r: BenchSchedulerReport = {
      samples: sched.samples,
      callSamples: sched.callSamples,
      placed: sched.placed,
      rejected: sched.rejected,
      registrations: sched.registrations,
      views: sched.view().version,
      pingSamples: pings,
    };
    send({ type: 'report', report: r });
  } else if (m.type === 'stop') {
    sched.stop();
    ping.close();
    process.disconnect();
  }
});
sched.run().catch((e: unknown) => {
  process.stderr.write(`bench scheduler: ${String(e)}\n`);
  process.exit(1);
});
