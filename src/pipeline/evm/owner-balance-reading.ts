import { AsyncResource } from 'node:async_hooks';
import type { EvmChain } from '../../domain/chains.ts';
import type { ChainReader } from '../../signing/types.ts';
import type { BalanceReading } from '../../store/owner-balance.ts';
import type { OwnerCaches } from './owner-caches.ts';

/*
 * `balanceOf(owner)` at a known block, one reading per (chain, owner) shared by a worker process's
 * owner choices (evm-owner.ts). A reading a little old only counts payments that have landed since
 * as still reserved, and misses deposits since: it can only under-count what the owner has. So a
 * reading older than BALANCE_READ_MAX_AGE_MS is refreshed in the background while it still serves;
 * a row waits for a reading only when there is none yet, or when it asks for a fresh one (it found
 * the owner short, or the reading older than one already used). The worker takes the first reading
 * of each owner as it starts (`warmOwnerBalance`), so that its first rows do not wait for it.
 */

/** How long a balance reading serves later choices in this process before it is read again. */
const BALANCE_READ_MAX_AGE_MS = 1_000;

/**
 * Runs `f` in the async context this module was loaded in (the process's start), not the caller's: a
 * background refresh serves every row, and made in the row that set it off it would show in that
 * row's trace as calls of whatever step the row is at when each of its reads goes out
 * (queue/run-spans.ts: the run's context stands for its open step).
 */
const outsideAnyRow = AsyncResource.bind(<T>(f: () => T): T => f());

type Reading = {
  readonly caches: OwnerCaches;
  readonly reader: Pick<ChainReader, 'usdcBalanceAtHead'>;
  readonly chain: EvmChain;
  readonly owner: string;
};

/** The owner's balance for a choice: the shared reading, or a new one (`fresh`, or none yet). */
export async function readOwnerBalance(
  r: Reading,
  fresh: boolean,
  onRefreshFailed: (err: unknown) => void,
): Promise<BalanceReading | undefined> {
  const key = keyOf(r);
  if (fresh) return await readNow(r);
  const hit = r.caches.readings.get(key);
  if (!hit) return await firstReading(r);
  if (Date.now() - hit.at >= BALANCE_READ_MAX_AGE_MS && !hit.refresh) {
    hit.refresh = outsideAnyRow(() => readNow(r))
      .catch(onRefreshFailed)
      .finally(() => {
        hit.refresh = undefined;
        hit.at = Math.max(hit.at, Date.now() - BALANCE_READ_MAX_AGE_MS / 2);
      });
  }
  return hit.reading;
}

/**
 * Takes the owner's first reading now, ahead of any row (the worker's start): the rows that need
 * it meanwhile wait for this one instead of reading again. A failure is left to the rows, which
 * then read for themselves.
 */
export function warmOwnerBalance(r: Reading): void {
  if (r.caches.readings.has(keyOf(r))) return;
  firstReading(r).catch(() => {});
}

/** The reading under way when there is none yet (one per owner, whoever asked first), else a new one. */
async function firstReading(r: Reading): Promise<BalanceReading | undefined> {
  const key = keyOf(r);
  const pending = r.caches.firstReads.get(key);
  if (pending) {
    try {
      return await pending;
    } catch {
      // Whoever started it reports its failure: this row reads for itself.
      return await readNow(r);
    }
  }
  const reading = readNow(r).finally(() => r.caches.firstReads.delete(key));
  r.caches.firstReads.set(key, reading);
  return await reading;
}

/** A new reading, kept unless a newer one is kept already (readings only move forward). */
async function readNow(r: Reading): Promise<BalanceReading | undefined> {
  const at = await r.reader.usdcBalanceAtHead(r.chain, r.owner);
  const reading = at === undefined ? undefined : { balance: at.balance, block: at.block.number };
  const key = keyOf(r);
  const now = r.caches.readings.get(key);
  if (!now || now.reading === undefined || reading === undefined || reading.block >= now.reading.block)
    r.caches.readings.set(key, { at: Date.now(), reading });
  return reading;
}

function keyOf(r: Reading): string {
  return `${r.chain}|${r.owner}`;
}
