import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { isChain, type Chain } from '../domain/chains.ts';
import { isFinalIntentStatus } from '../domain/transfer.ts';
import { openIntents, readBatches } from './batch-record.ts';
import { keys } from './keys.ts';
import { transfersInState } from './queued-transfers.ts';
import { feeFieldsOf, txSignatureOf } from './transfer-record.ts';
import { releaseTokenLock } from './token-lock.ts';

/*
 * What treasury rebalancing reads of the store (docs/rebalancing.md):
 * - the transfers still moving money: not final (queued, held, in progress) or submitted with an
 *   intent that is not final yet, from which a chain's `outgoing` and `incoming` are counted;
 * - per policy, the last batch a run enqueued (`P:rebalance:<policy>`: `last_batch`), and a short
 *   lock (`P:rebalance:<policy>:lock`, SET NX PX) held while a run decides, so two runs started at
 *   the same instant make one batch.
 */

/** A transfer that has not finished moving money, parsed at the store's edge. */
export type MovingTransfer = {
  readonly batchId: string;
  readonly id: string;
  readonly state: 'queued' | 'in_progress' | 'submitted';
  readonly from: Chain;
  readonly to: Chain;
  /** micro-USDC */
  readonly amount: bigint;
  readonly recipient: string;
  /** micro-USDC; null before an estimate was recorded. */
  readonly netReceive: bigint | null;
  readonly txSignature: string | null;
};

const FIELDS = [
  'from',
  'to',
  'amount',
  'recipient',
  'net_receive',
  'intent_status',
  'intent_untracked',
  'tx_signature',
  'tx_signature_rest',
  'est_pending',
];
const BATCH_PAGE = 500;
const MOVING_STATES = ['queued', 'in_progress', 'submitted'] as const;

/**
 * Every transfer of every batch that is not complete, or complete with submitted intents not final
 * yet: its queued and in-progress transfers (a held batch's too) and its submitted ones whose intent
 * is not final (`complete`/`failed`; one the status route cannot follow counts as final).
 */
export async function movingTransfers(redis: Redis, prefix: string): Promise<MovingTransfer[]> {
  const k = keys(prefix);
  const out: MovingTransfer[] = [];
  for (let start = 0; ; start += BATCH_PAGE) {
    const ids = await redis.zrange(k.batches, start, start + BATCH_PAGE - 1);
    if (ids.length === 0) break;
    const batches = await readBatches(redis, prefix, ids);
    const open = ids.filter((_, i) => {
      const b = batches[i];
      return b ? !b.complete || openIntents(b) > 0 : false;
    });
    for (const batchId of open) {
      for (const state of MOVING_STATES) {
        for await (const page of transfersInState(redis, prefix, { batchId, state }, FIELDS)) {
          for (const { id, values } of page) {
            const t = moving(batchId, id, state, values);
            if (t) out.push(t);
          }
        }
      }
    }
    if (ids.length < BATCH_PAGE) break;
  }
  return out;
}

function moving(
  batchId: string,
  id: string,
  state: MovingTransfer['state'],
  values: readonly (string | null)[],
): MovingTransfer | undefined {
  const [from, to, amount, recipient, stored, intentStatus, untracked, sigHead, sigRest, pending] = values;
  // A send's mark may hold the estimate not yet moved into the fee fields (transfer-record.ts).
  const net = feeFieldsOf({
    net_receive: stored ?? undefined,
    est_pending: pending ?? undefined,
  }).net_receive;
  if (!from || !to || !isChain(from) || !isChain(to) || !amount || !/^[0-9]+$/.test(amount) || !recipient)
    return undefined;
  if (state === 'submitted') {
    if (isFinalIntentStatus(intentStatus ?? null) || untracked === '1') return undefined;
  }
  return {
    batchId,
    id,
    state,
    from,
    to,
    amount: BigInt(amount),
    recipient,
    netReceive: net && /^[0-9]+$/.test(net) ? BigInt(net) : null,
    txSignature: txSignatureOf({ tx_signature: sigHead, tx_signature_rest: sigRest }),
  };
}

const runKey = (prefix: string, policy: string) => `${prefix}:rebalance:${policy}`;

/** The batch the policy's last run enqueued, or null. */
export async function lastRebalanceBatch(
  redis: Redis,
  prefix: string,
  policy: string,
): Promise<string | null> {
  return (await redis.hget(runKey(prefix, policy), 'last_batch')) || null;
}

export async function noteRebalanceBatch(
  redis: Redis,
  prefix: string,
  policy: string,
  batch: { readonly id: string; readonly at: number },
): Promise<void> {
  await redis.hset(runKey(prefix, policy), { last_batch: batch.id, last_at: String(batch.at) });
}

/**
 * Takes the policy's run lock, waiting for it up to `waitMs` (a run started at the same instant
 * decides after the first one, and finds its batch). The lock expires by itself after `ttlMs`
 * should its holder die. Returns the release, or undefined when it could not be taken in time.
 */
export async function takeRebalanceLock(
  redis: Redis,
  prefix: string,
  policy: string,
  options: { ttlMs: number; waitMs: number; pollMs?: number },
): Promise<(() => Promise<void>) | undefined> {
  const key = `${runKey(prefix, policy)}:lock`;
  const token = randomUUID();
  const deadline = Date.now() + options.waitMs;
  for (;;) {
    if ((await redis.set(key, token, 'PX', options.ttlMs, 'NX')) === 'OK') {
      return async () => {
        await releaseTokenLock(redis, key, token);
      };
    }
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
  }
}

const balanceKey = (prefix: string) => `${prefix}:treasury:balance`;

/**
 * The treasury's balance per chain as the workers last read it (`P:treasury:balance`: field
 * `<CHAIN>` → micro-USDC, `<CHAIN>:at` → when), for `/metrics`.
 */
export async function saveTreasuryBalances(
  redis: Redis,
  prefix: string,
  balances: readonly { readonly chain: Chain; readonly balance: bigint }[],
  at: number,
): Promise<void> {
  if (balances.length === 0) return;
  const fields: Record<string, string> = {};
  for (const b of balances) {
    fields[b.chain] = b.balance.toString();
    fields[`${b.chain}:at`] = String(at);
  }
  await redis.hset(balanceKey(prefix), fields);
}

export async function storedTreasuryBalances(
  redis: Redis,
  prefix: string,
): Promise<{ chain: Chain; balance: bigint; at: number }[]> {
  const h = await redis.hgetall(balanceKey(prefix));
  const out: { chain: Chain; balance: bigint; at: number }[] = [];
  for (const [field, value] of Object.entries(h)) {
    if (!isChain(field) || !/^[0-9]+$/.test(value)) continue;
    out.push({ chain: field, balance: BigInt(value), at: Number(h[`${field}:at`] ?? 0) });
  }
  return out;
}

/** A schedule that rebalances: its stored policy, its cron, and what its last firing did. */
export type RebalanceSchedule = {
  readonly schedule: string;
  readonly policyText: string;
  readonly policyFile: string;
  readonly cron: string;
  readonly tz: string;
  /** The last firing's scheduled time (ms), its batch id, status and error; null before the first. */
  readonly lastFiredAt: number | null;
  readonly lastBatch: string | null;
  readonly lastStatus: string | null;
  readonly lastError: string | null;
};

const SCHEDULE_FIELDS = [
  'policy',
  'policy_file',
  'cron',
  'tz',
  'last_fired_at',
  'last_batch',
  'last_status',
  'last_error',
];

/** The schedules that rebalance: their name, stored policy text and file name, cron and last firing. */
export async function rebalanceSchedules(redis: Redis, prefix: string): Promise<RebalanceSchedule[]> {
  const k = keys(prefix);
  const names = (await redis.smembers(k.schedules)).sort();
  if (names.length === 0) return [];
  const pipe = redis.pipeline();
  for (const n of names) pipe.hmget(k.schedule(n), ...SCHEDULE_FIELDS);
  const res = (await pipe.exec()) ?? [];
  return names.flatMap((schedule, i) => {
    const [policy, file, cron, tz, firedAt, batch, status, error] = (res[i]?.[1] ?? []) as (string | null)[];
    if (!policy) return [];
    return [
      {
        schedule,
        policyText: policy,
        policyFile: file ?? schedule,
        cron: cron ?? '',
        tz: tz || 'UTC',
        lastFiredAt: firedAt && /^[0-9]+$/.test(firedAt) ? Number(firedAt) : null,
        lastBatch: batch || null,
        lastStatus: status || null,
        lastError: error || null,
      },
    ];
  });
}
