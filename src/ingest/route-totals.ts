import type { Chain } from '../domain/chains.ts';
import type { TransferRequest } from '../domain/transfer.ts';

export type RouteTotal = {
  readonly from: Chain;
  readonly to: Chain;
  readonly rows: number;
  readonly amount: bigint;
};

/** Rows and amount per source → destination chain, in order of first appearance. */
export function routeTotals(transfers: readonly TransferRequest[]): RouteTotal[] {
  const byRoute = new Map<string, { from: Chain; to: Chain; rows: number; amount: bigint }>();
  for (const t of transfers) {
    const key = `${t.from}>${t.to}`;
    const r = byRoute.get(key) ?? { from: t.from, to: t.to, rows: 0, amount: 0n };
    r.rows++;
    r.amount += t.amount;
    byRoute.set(key, r);
  }
  return [...byRoute.values()];
}
