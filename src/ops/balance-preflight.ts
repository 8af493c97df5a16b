import { formatUsdc, tryParseUsdc } from '../domain/money.ts';
import type { WalletsReport } from './wallets.ts';
import { counted } from '../domain/plural.ts';

/*
 * `enqueue --dry-run`'s balance pre-flight (issue 17): per source chain, what the batch needs
 * against what the treasury holds — every owner's balance summed — and whether the rows can be
 * split over the owners as their balances stand. A row is paid by one owner, whole: a batch the
 * owners cover together may still have rows no single owner can pay (they would wait `queued`,
 * reason "no owner's USDC balance covers …", until a deposit), which calls for a rebalancing
 * between owners before the batch is enqueued.
 *
 * Advisory only: nothing here decides a payment (the workers reserve each owner's balance in Redis
 * as they sign, owner-balance.ts). Balances are read as the chain shows them now; what other
 * batches have in flight is not subtracted.
 */

type OwnerAvailable = { readonly address: string; readonly available: bigint | null };

export type ChainPreflight = {
  readonly chain: string;
  /**
   * Whether a balance could be read at all for this chain (an RPC, and a treasury address: `no_key`
   * when no public address of the chain's family is known, docs/keys.md).
   */
  readonly source: 'read' | 'no_key' | 'no_rpc' | 'unreadable';
  readonly rows: number;
  readonly needed: bigint;
  readonly largestRow: bigint;
  readonly owners: readonly OwnerAvailable[];
  /** Every owner's balance summed; null when any of them is unknown. */
  readonly available: bigint | null;
  /** The most one owner holds; null when unknown. */
  readonly largestOwner: bigint | null;
  /** Rows bigger than the largest single owner's balance: no owner can ever pay them as things stand. */
  readonly rowsOverEveryOwner: number;
  /**
   * Rows left over when the rows are split over the owners largest first, each into the owner with
   * the least room that still fits it (best-fit decreasing); 0 when a split was found.
   */
  readonly unplaced: number;
  /**
   * `ok` a split of the rows over the owners exists; `short` the owners together hold less than the
   * batch needs; `rebalance` they hold enough together but no split was found; `unknown` a balance
   * could not be read.
   */
  readonly verdict: 'ok' | 'short' | 'rebalance' | 'unknown';
};

/**
 * Best-fit decreasing: a heuristic for a problem (bin packing) with no fast exact answer. When it
 * places every row a split certainly exists; when it does not, one might still exist, but only a
 * tight one — and the workers do not plan a split (each row takes the first owner free to pay it,
 * as rows come), so a tight split would stall anyway: rebalancing is the right advice either way.
 */
function unplacedRows(amounts: readonly bigint[], balances: readonly bigint[]): number {
  const room = [...balances];
  const sorted = [...amounts].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  let left = 0;
  for (const amount of sorted) {
    let best = -1;
    for (let i = 0; i < room.length; i++) {
      const r = room[i] as bigint;
      if (r >= amount && (best === -1 || r < (room[best] as bigint))) best = i;
    }
    if (best === -1) left++;
    else room[best] = (room[best] as bigint) - amount;
  }
  return left;
}

/** The pre-flight of one source chain from its rows' amounts and its owners' balances. */
export function preflightChain(
  chain: string,
  amounts: readonly bigint[],
  owners: readonly OwnerAvailable[],
  source: ChainPreflight['source'],
): ChainPreflight {
  const needed = amounts.reduce((s, a) => s + a, 0n);
  const largestRow = amounts.reduce((m, a) => (a > m ? a : m), 0n);
  const known = owners.length > 0 && owners.every((o) => o.available !== null);
  const balances = known ? owners.map((o) => o.available as bigint) : [];
  const available = known ? balances.reduce((s, b) => s + b, 0n) : null;
  const largestOwner = known ? balances.reduce((m, b) => (b > m ? b : m), 0n) : null;
  const rowsOverEveryOwner = largestOwner === null ? 0 : amounts.filter((a) => a > largestOwner).length;
  const unplaced = known && available !== null && available >= needed ? unplacedRows(amounts, balances) : 0;
  const verdict =
    available === null ? 'unknown' : available < needed ? 'short' : unplaced > 0 ? 'rebalance' : 'ok';
  return {
    chain,
    source: known ? 'read' : source,
    rows: amounts.length,
    needed,
    largestRow,
    owners,
    available,
    largestOwner,
    rowsOverEveryOwner,
    unplaced,
    verdict,
  };
}

const parse = (text: string | null | undefined): bigint | null => {
  if (!text) return null;
  const r = tryParseUsdc(text, { allowZero: true });
  return r.ok ? r.value : null;
};

/**
 * Per source chain of `rows`, from what `readWallets` read (undefined when it could not run):
 * EVM chains sum every owner, SOLANA is its one wallet.
 */
export function balancePreflightOf(
  rows: readonly { readonly from: string; readonly amount: bigint }[],
  report: WalletsReport | undefined,
): ChainPreflight[] {
  const amounts = new Map<string, bigint[]>();
  for (const t of rows) {
    const list = amounts.get(t.from);
    if (list) list.push(t.amount);
    else amounts.set(t.from, [t.amount]);
  }
  return [...amounts].map(([chain, list]) => {
    if (chain === 'SOLANA') {
      const s = report?.solana;
      const owners = s ? [{ address: s.address, available: parse(s.usdc_balance) }] : [];
      return preflightChain(chain, list, owners, !s ? 'no_key' : !s.rpc ? 'no_rpc' : 'unreadable');
    }
    const evm = report?.evm;
    const owners = (evm?.owners ?? []).map((o) => ({
      address: o.address,
      available: parse(o.chains.find((c) => c.chain === chain)?.usdc_balance),
    }));
    const rpc = evm?.totals.find((t) => t.chain === chain)?.rpc ?? false;
    return preflightChain(chain, list, owners, !evm ? 'no_key' : !rpc ? 'no_rpc' : 'unreadable');
  });
}

/** The `balances` entries of `enqueue --dry-run --json` (docs/scaling.md "Several treasury owners"). */
export function preflightJson(p: ChainPreflight) {
  return {
    chain: p.chain,
    needed: formatUsdc(p.needed),
    available: p.available === null ? null : formatUsdc(p.available),
    covered: p.available === null ? null : p.available >= p.needed,
    rebalance: p.verdict === 'unknown' ? null : p.verdict === 'rebalance',
    largest_row: formatUsdc(p.largestRow),
    rows_over_every_owner: p.available === null ? null : p.rowsOverEveryOwner,
    owners: p.owners.map((o) => ({
      address: o.address,
      available: o.available === null ? null : formatUsdc(o.available),
    })),
  };
}

/** The `available` cell of the human table. */
export function availableText(p: ChainPreflight): string {
  if (p.available !== null) return formatUsdc(p.available);
  return {
    read: 'unknown',
    no_key: 'unknown (no treasury address known)',
    no_rpc: 'unknown (no RPC)',
    unreadable: 'unknown (RPC did not answer)',
  }[p.source];
}

/** The `owners` cell of the human table: each owner's balance when there are a few, else the largest. */
export function ownersText(p: ChainPreflight): string {
  const n = p.owners.length;
  if (n <= 1) return '';
  if (p.available === null) return `${n} owners`;
  if (n <= 4) return `${n} owners: ${p.owners.map((o) => formatUsdc(o.available as bigint)).join(' + ')}`;
  return `${n} owners, the largest ${formatUsdc(p.largestOwner as bigint)}`;
}

/** The sentence under the table for a chain that is short or needs rebalancing; null when fine. */
export function preflightWarning(p: ChainPreflight): string | null {
  const n = p.owners.length;
  if (p.verdict === 'short') {
    const together =
      n > 1 ? ` (its ${n} owners hold ${formatUsdc(p.available as bigint)} USDC together)` : '';
    return `the ${p.chain} treasury cannot cover this batch: short by ${formatUsdc(p.needed - (p.available as bigint))} USDC${together}`;
  }
  if (p.verdict !== 'rebalance') return null;
  const head = `the ${p.chain} treasury covers this batch across its ${n} owners (${formatUsdc(p.available as bigint)} USDC) but needs rebalancing between owners:`;
  const tail =
    'a row is paid whole by one owner, so move USDC between owners before enqueueing, or those rows wait queued until one owner can cover them';
  if (p.rowsOverEveryOwner > 0) {
    return `${head} ${p.rowsOverEveryOwner === 1 ? '1 row needs' : `${p.rowsOverEveryOwner} rows need`} more than any single owner holds (the largest row ${formatUsdc(p.largestRow)}, the most one owner holds ${formatUsdc(p.largestOwner as bigint)} USDC); ${tail}`;
  }
  return `${head} its rows do not split over the owners' balances as they stand (${counted(p.unplaced, 'row')} left over); ${tail}`;
}
