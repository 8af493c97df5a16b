import type { Redis } from 'ioredis';
import type { TransferState } from '../domain/transfer.ts';
import { DUPLICATE_WINDOW_MS, fingerprintDayOf } from './batch-writer.ts';
import { keys } from './keys.ts';

const PAGE = 1000;

/** Payout ids already owned by a batch other than `batchId`: id → owning batch. */
export async function findPayoutOwners(
  redis: Redis,
  prefix: string,
  ids: readonly string[],
  batchId: string,
): Promise<Map<string, string>> {
  const k = keys(prefix);
  const owners = new Map<string, string>();
  // The pages go out together (one round trip for a large file, not one per page); the owners are
  // collected in page order.
  const pages: string[][] = [];
  for (let i = 0; i < ids.length; i += PAGE) pages.push(ids.slice(i, i + PAGE));
  const values = await Promise.all(pages.map((page) => redis.mget(...page.map((id) => k.payout(id)))));
  pages.forEach((page, p) => {
    (values[p] as (string | null)[]).forEach((owner, j) => {
      if (owner !== null && owner !== batchId) owners.set(page[j] as string, owner);
    });
  });
  return owners;
}

/** States in which an earlier transfer makes a new id-less row paying the same a likely duplicate. */
const ACTIVE: readonly TransferState[] = ['queued', 'in_progress', 'submitted', 'needs_review'];

export type RecentPayment = {
  readonly batchId: string;
  readonly transferId: string;
  readonly state: TransferState;
};

/**
 * For each fingerprint, a transfer of another batch enqueued within the last 24 hours that pays the
 * same and is queued, in progress, submitted or in review (a failed or rejected one paid nothing).
 * `sameFamily` excludes batches that are not "other" (the same schedule's other firings).
 * Reads the fingerprint sets of today and yesterday (a 24-hour window spans two UTC days), and the
 * per-fingerprint sets written before them until the last of those expires.
 */
export async function findRecentPayments(
  redis: Redis,
  prefix: string,
  fingerprints: readonly string[],
  options: { batchId: string; now: number; sameFamily?: (batchId: string) => boolean },
): Promise<Map<string, RecentPayment>> {
  const k = keys(prefix);
  const found = new Map<string, RecentPayment>();
  const unique = [...new Set(fingerprints)];
  const since = options.now - DUPLICATE_WINDOW_MS;
  const today = fingerprintDayOf(options.now);
  for (let i = 0; i < unique.length; i += PAGE) {
    const chunk = unique.slice(i, i + PAGE);
    const pipe = redis.pipeline();
    pipe.hmget(k.fingerprintDay(today - 1), ...chunk);
    pipe.hmget(k.fingerprintDay(today), ...chunk);
    for (const fp of chunk) pipe.zrangebyscore(k.fingerprint(fp), since, '+inf');
    const results = (await pipe.exec()) ?? [];
    const candidates: { fp: string; batchId: string; transferId: string }[] = [];
    const consider = (fp: string, member: string): void => {
      const slash = member.indexOf('/');
      const batchId = member.slice(0, slash);
      if (batchId === options.batchId || options.sameFamily?.(batchId)) return;
      candidates.push({ fp, batchId, transferId: member.slice(slash + 1) });
    };
    results.forEach(([err, value], j) => {
      if (err) throw err;
      if (j < 2) {
        (value as (string | null)[]).forEach((entries, f) => {
          for (const e of dayEntries(entries, since)) consider(chunk[f] as string, e);
        });
      } else {
        for (const member of value as string[]) consider(chunk[j - 2] as string, member);
      }
    });
    if (candidates.length === 0) continue;
    const states = redis.pipeline();
    for (const c of candidates) states.hget(k.transfer(c.batchId, c.transferId), 'state');
    const stateResults = (await states.exec()) ?? [];
    stateResults.forEach(([err, state], j) => {
      if (err) throw err;
      const c = candidates[j] as (typeof candidates)[number];
      if (!found.has(c.fp) && ACTIVE.includes(state as TransferState)) {
        found.set(c.fp, { batchId: c.batchId, transferId: c.transferId, state: state as TransferState });
      }
    });
  }
  return found;
}

/**
 * The `<batchId>/<transferId>` of a day-set value's entries (`<ms>:<batchId>/<transferId>`, space
 * separated; transfers-write.lua) enqueued at `since` or later.
 */
function dayEntries(value: string | null, since: number): string[] {
  if (value === null) return [];
  const out: string[] = [];
  for (const entry of value.split(' ')) {
    const colon = entry.indexOf(':');
    if (colon > 0 && Number(entry.slice(0, colon)) >= since) out.push(entry.slice(colon + 1));
  }
  return out;
}
