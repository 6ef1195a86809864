/**
 * The quality of service of a failure detector on a heartbeat trace, with the metrics of Chen,
 * Toueg and Aguilera ("On the Quality of Service of Failure Detectors", 2002):
 *
 * - detection time T_D: from a crash to the moment the detector suspects for good. Crashes are
 *   injected at random instants between two recorded arrivals: every later arrival is dropped, so
 *   T_D = max(0, suspectAt after the last arrival before the crash - crash time);
 * - mistakes: on the trace as recorded (nobody crashed), every arrival that comes after the host
 *   was suspected is a mistake, lasting from the suspicion to that arrival (T_M); their rate gives
 *   the mistake recurrence time T_MR (here as mistakes per hour);
 * - query accuracy P_A: the share of the time the detector was right (not suspecting a live host).
 *
 * Pure and deterministic: the crash instants come from the given seed.
 */
import { seededRandom } from '@fuxi/common';
import { createDetector, type DetectorConfig } from './detectors.js';

export interface DetectorQos {
  /** Injected crashes measured. */
  crashes: number;
  detectionMsP50: number;
  detectionMsP99: number;
  mistakes: number;
  mistakesPerHour: number;
  /** Mean mistake duration (T_M), 0 without mistakes. */
  mistakeMsMean: number;
  queryAccuracy: number;
  /** Trace time covered, ms. */
  spanMs: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Replays each node's arrivals through a fresh detector of `cfg`; `crashesPerNode` crashes are
 * injected per node, after its first `warmup` arrivals (the detector has learnt by then, as it has
 * on a long-running master).
 */
export function evaluateDetector(
  cfg: DetectorConfig,
  traces: ReadonlyMap<string, readonly number[]>,
  opts: { crashesPerNode?: number; warmup?: number; seed?: number } = {},
): DetectorQos {
  const rnd = seededRandom(opts.seed ?? 1);
  const warmup = opts.warmup ?? 20;
  const detections: number[] = [];
  let mistakes = 0;
  let mistakeMs = 0;
  let spanMs = 0;
  for (const arrivals of traces.values()) {
    if (arrivals.length < warmup + 2) continue;
    const d = createDetector(cfg);
    const suspectAfter: number[] = [];
    for (let i = 0; i < arrivals.length; i++) {
      const t = arrivals[i]!;
      if (i > 0) {
        const at = d.suspectAt();
        if (t > at) {
          mistakes++;
          mistakeMs += t - at;
        }
      }
      d.heartbeat(t);
      suspectAfter.push(d.suspectAt());
    }
    spanMs += arrivals[arrivals.length - 1]! - arrivals[0]!;
    for (let c = 0; c < (opts.crashesPerNode ?? 50); c++) {
      const k = warmup + Math.floor(rnd() * (arrivals.length - warmup - 1));
      const crash = arrivals[k]! + rnd() * (arrivals[k + 1]! - arrivals[k]!);
      detections.push(Math.max(0, suspectAfter[k]! - crash));
    }
  }
  detections.sort((a, b) => a - b);
  const hours = spanMs / 3_600_000;
  return {
    crashes: detections.length,
    detectionMsP50: percentile(detections, 50),
    detectionMsP99: percentile(detections, 99),
    mistakes,
    mistakesPerHour: hours > 0 ? mistakes / hours : 0,
    mistakeMsMean: mistakes > 0 ? mistakeMs / mistakes : 0,
    queryAccuracy: spanMs > 0 ? 1 - mistakeMs / spanMs : 1,
    spanMs,
  };
}
