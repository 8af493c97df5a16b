import { Gauge } from 'prom-client';
import { microValue, type Snapshot } from './scrape-snapshot.ts';
import { StoredMetric, type StoredValue } from './stored-metric.ts';

/** Per treasury owner: transfers paid and lease waits (counted by the workers), the balance in flight. */
export function createOwnerSeries() {
  return {
    ownerTransfers: new StoredMetric(
      'counter',
      'usdc_batch_owner_transfers_total',
      'Transfers the service accepted, by source chain and the treasury owner whose permit paid them, all workers.',
    ),
    ownerLeaseWaits: new StoredMetric(
      'counter',
      'usdc_batch_owner_lease_waits_total',
      "Times a transfer found a treasury owner's nonce lease taken on its source chain (it tried the next owner, or waited), by chain and owner, all workers.",
    ),
    ownerInFlight: new Gauge({
      name: 'usdc_batch_owner_in_flight_micro_usdc',
      help: "Micro-USDC of a treasury owner's balance reserved for transfers whose payment a worker has not yet seen mined (P:reserve), by source chain and owner. Reservations of payments that landed are dropped when the owner's next transfer is chosen, so the gauge can stay above 0 after a batch until then.",
      labelNames: ['chain', 'owner'],
      registers: [],
    }),
  };
}
export type OwnerSeries = ReturnType<typeof createOwnerSeries>;

export function fillOwnerSeries(s: OwnerSeries, snap: Snapshot): void {
  // Every known (chain, owner) gets a series from its first scrape (0 until it counts something).
  const known = [...snap.ownersInFlight.keys()];
  s.ownerTransfers.values = ownerCounters(snap.counters, 'owner_paid', known);
  s.ownerLeaseWaits.values = ownerCounters(snap.counters, 'owner_lease_waits', known);
  s.ownerInFlight.reset();
  for (const [pair, micro] of snap.ownersInFlight) {
    const [chain = '', owner = ''] = pair.split('|');
    s.ownerInFlight.set({ chain, owner }, microValue(micro));
  }
}

/** An owner counter for every known (chain, owner), 0 where nothing was counted yet. */
function ownerCounters(
  counters: Record<string, string>,
  name: string,
  pairs: readonly string[],
): StoredValue[] {
  return pairs.map((pair) => {
    const [chain = '', owner = ''] = pair.split('|');
    return { labels: { chain, owner }, value: Number(counters[`${name}|${pair}`] ?? 0) || 0 };
  });
}
