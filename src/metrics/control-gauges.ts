import { Gauge } from 'prom-client';
import { microValue, type Snapshot } from './scrape-snapshot.ts';
import { listAgeSeconds } from '../store/screening-state.ts';
import { ALIVE_WINDOW_MS, HEARTBEAT_MS } from './worker-heartbeat.ts';

/** The workers alive and the daily cap with what it has spent. */
export function createControlGauges() {
  return {
    workers: new Gauge({
      name: 'usdc_batch_workers',
      help: `Worker processes alive: their heartbeat (every ${HEARTBEAT_MS / 1000} s) was seen in the last ${ALIVE_WINDOW_MS / 1000} s.`,
      registers: [],
    }),
    dailySpend: new Gauge({
      name: 'usdc_batch_daily_spend_micro_usdc',
      help: 'Micro-USDC reserved or sent in the rolling 24 hours under MAX_DAILY_USDC (0 when no cap is set: nothing is reserved).',
      registers: [],
    }),
    dailyCap: new Gauge({
      name: 'usdc_batch_daily_cap_micro_usdc',
      help: 'MAX_DAILY_USDC in micro-USDC; -1 when no cap is set.',
      registers: [],
    }),
    listAge: new Gauge({
      name: 'usdc_batch_screening_list_age_seconds',
      help: 'Age of the oldest sanctions list the workers screen with (from its date of issue); absent when they have none (docs/screening.md).',
      registers: [],
    }),
    listMaxAge: new Gauge({
      name: 'usdc_batch_screening_max_age_seconds',
      help: "The workers' SCREENING_MAX_AGE: a list older makes screening stale and nothing is signed.",
      registers: [],
    }),
  };
}
export type ControlGauges = ReturnType<typeof createControlGauges>;

export function fillControlGauges(g: ControlGauges, snap: Snapshot, dailyCap: bigint | undefined): void {
  g.workers.set(snap.workersAlive);
  g.dailySpend.set(microValue(snap.dailySpend));
  g.dailyCap.set(dailyCap === undefined ? -1 : microValue(dailyCap));
  const age = listAgeSeconds(snap.screening, snap.at);
  g.listAge.reset();
  g.listMaxAge.reset();
  if (age !== null) g.listAge.set(age);
  if (snap.screening) g.listMaxAge.set(Math.floor(snap.screening.maxAgeMs / 1000));
}
