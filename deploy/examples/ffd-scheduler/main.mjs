#!/usr/bin/env node
// fuxi-ffd-scheduler: an external scheduler that packs the task slots of jobs with `scheduler: ffd`
// (or --name) first-fit decreasing. Usage: fuxi-ffd-scheduler [--name ffd] [--quota-group g | --testbed t]
// Masters from $FUXI_MASTER (comma-separated; default 127.0.0.1:7070).
import { parseArgs } from 'node:util';
import { ExternalScheduler } from '@fuxi/client';
import { firstFitDecreasing } from './ffd.mjs';

const { values: args } = parseArgs({ options: { name: { type: 'string', default: 'ffd' }, 'quota-group': { type: 'string' }, testbed: { type: 'string' } } });
const log = (msg, fields = {}) => console.error(JSON.stringify({ time: new Date().toISOString(), msg, ...fields }));

class FfdScheduler extends ExternalScheduler {
  onState(view) {
    return firstFitDecreasing(view);
  }
  onPlaced(o) {
    if (o.applied > 0) log('placed', { placements: o.placements.length, applied: o.applied, ms: Math.round((o.doneAtMs - o.viewAtMs) * 100) / 100 });
  }
  onRejected(rejections) {
    for (const r of rejections) log('rejected', { ...r.placement, code: r.code, message: r.message });
  }
}

const scheduler = new FfdScheduler({ name: args.name, style: 'slot', quotaGroup: args['quota-group'], testbed: args.testbed, log });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => scheduler.stop());
scheduler.run().then(
  () => process.exit(0),
  (e) => {
    log('stopped', { err: String(e?.message ?? e) });
    process.exit(1);
  },
);
