import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

/**
 * `NEW_RECIPIENT_MAX_USDC` (docs/configuration.md): what a recipient that is not in the address book is
 * being paid across unfinished batches. Each row paying a new recipient is registered in
 * `P:recipient-open:<recipient key>` (ZSET, member `<batch>/<transfer>/<micro-USDC>`, score = when)
 * before the sum is read, so that of two enqueues racing to the same new address the later one
 * always sees the earlier: ten rows of 999 do not slip under a 1,000 cap, split over batches or not.
 *
 * A registered row counts while its batch is unfinished and the row itself has not ended `failed` or
 * `rejected` (it paid nothing); rows of finished batches are pruned when read. A row whose batch
 * record does not exist yet counts for an hour (its enqueue may still be writing it), then is pruned.
 */
export type OpenPayment = {
  readonly recipientKey: string;
  readonly batchId: string;
  readonly transferId: string;
  readonly amount: bigint;
};

// Long enough for any enqueue to write its batch record; a crashed one stops counting after it.
const UNWRITTEN_GRACE_MS = 60 * 60 * 1000;
// Registrations of a recipient nobody pays any more go away by themselves.
const IDLE_TTL_MS = 30 * 24 * 60 * 60 * 1000;

const memberOf = (p: OpenPayment) => `${p.batchId}/${p.transferId}/${p.amount}`;

/** Registers the rows; returns those this call added (a re-run's rows were there already). */
export async function registerOpenPayments(
  redis: Redis,
  prefix: string,
  payments: readonly OpenPayment[],
  now: number,
): Promise<OpenPayment[]> {
  if (payments.length === 0) return [];
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const p of payments) {
    pipe.zadd(k.recipientOpen(p.recipientKey), 'NX', now, memberOf(p));
    pipe.pexpire(k.recipientOpen(p.recipientKey), IDLE_TTL_MS);
  }
  const res = (await pipe.exec()) ?? [];
  for (const [err] of res) if (err) throw err;
  return payments.filter((_, i) => res[2 * i]?.[1] === 1);
}

/** Takes back the registrations of a batch whose enqueue was refused. */
export async function forgetOpenPayments(
  redis: Redis,
  prefix: string,
  payments: readonly OpenPayment[],
): Promise<void> {
  if (payments.length === 0) return;
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const p of payments) pipe.zrem(k.recipientOpen(p.recipientKey), memberOf(p));
  await pipe.exec();
}

type Member = {
  key: string;
  member: string;
  batchId: string;
  transferId: string;
  amount: bigint;
  at: number;
};

/** The open sum per recipient key, `batchId` being the batch judged (its own rows count). */
export async function openAmounts(
  redis: Redis,
  prefix: string,
  recipientKeys: readonly string[],
  options: { batchId: string; now: number },
): Promise<Map<string, bigint>> {
  const k = keys(prefix);
  const unique = [...new Set(recipientKeys)];
  const read = redis.pipeline();
  for (const key of unique) read.zrange(k.recipientOpen(key), 0, -1, 'WITHSCORES');
  const members: Member[] = [];
  ((await read.exec()) ?? []).forEach(([err, flat], i) => {
    if (err) throw err;
    const list = flat as string[];
    for (let j = 0; j < list.length; j += 2) {
      const parsed = parseMember(list[j] as string);
      if (parsed)
        members.push({
          key: unique[i] as string,
          member: list[j] as string,
          ...parsed,
          at: Number(list[j + 1]),
        });
    }
  });
  const facts = redis.pipeline();
  for (const m of members) {
    facts.hmget(k.batch(m.batchId), 'id', 'complete');
    facts.hget(k.transfer(m.batchId, m.transferId), 'state');
  }
  const answers = members.length > 0 ? ((await facts.exec()) ?? []) : [];
  const counts: Member[] = [];
  const stale: Member[] = [];
  members.forEach((m, i) => {
    const [id, complete] = (answers[2 * i]?.[1] ?? [null, null]) as [string | null, string | null];
    const state = answers[2 * i + 1]?.[1] as string | null;
    // The batch being judged: its rows count whatever its record says so far (a retried row is
    // still `failed` while it is judged), except those a guard rejected.
    if (m.batchId === options.batchId) {
      if (state !== 'rejected' && state !== 'cancelled') counts.push(m);
    } else if (!id) {
      if (options.now - m.at < UNWRITTEN_GRACE_MS) counts.push(m);
      else stale.push(m);
    } else if (complete === '1') stale.push(m);
    else if (state !== 'failed' && state !== 'rejected' && state !== 'cancelled') counts.push(m);
  });
  if (stale.length > 0) {
    const prune = redis.pipeline();
    for (const m of stale) prune.zrem(k.recipientOpen(m.key), m.member);
    await prune.exec();
  }
  const out = new Map<string, bigint>(unique.map((key) => [key, 0n]));
  for (const m of counts) out.set(m.key, (out.get(m.key) ?? 0n) + m.amount);
  return out;
}

function parseMember(member: string): { batchId: string; transferId: string; amount: bigint } | undefined {
  const parts = member.split('/');
  if (parts.length !== 3 || !/^[0-9]+$/.test(parts[2] as string)) return undefined;
  return { batchId: parts[0] as string, transferId: parts[1] as string, amount: BigInt(parts[2] as string) };
}
