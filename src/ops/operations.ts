import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import { UsdcBatchError, ValidationError } from '../domain/errors.ts';
import type { TransferJobSink } from '../store/batch-writer.ts';
import { addJobsForQueuedTransfers } from '../store/batch-writer.ts';
import { recordAudit } from '../store/audit.ts';
import { keys } from '../store/keys.ts';
import { createTransferStore } from '../store/transfer-store.ts';

/**
 * Operator actions shared by the CLI and the HTTP API. Each one is recorded in the audit stream
 * with its actor.
 */
export type OpsDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  /** Who acts: `cli:<user>` or `http:<token name>`. */
  readonly actor: string;
  readonly now?: () => number;
};

export class NotFoundError extends UsdcBatchError {
  override name = 'NotFoundError';
}

/** Saved-step fields that belong to one payload; a `failed` transfer's payload is provably dead. */
const PAYLOAD_FIELDS = [
  'permit',
  'permit_nonce',
  'permit_deadline',
  'solana_intent',
  'solana_tx',
  'solana_expires_at',
  'solana_signed',
  'uncertain',
  'sends',
  'ambiguous',
  'unavailable',
  'send_state',
  'settle_at',
  'settled',
  'first_seen_at',
  'last_error',
  'spend_reserved',
  'error_code',
  'error_message',
];

async function requireBatch(deps: OpsDeps, batchId: string): Promise<Record<string, string>> {
  const b = await deps.redis.hgetall(keys(deps.prefix).batch(batchId));
  if (!b['id']) throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
  return b;
}

/**
 * Re-queues the batch's `failed` transfers only (never submitted, never needs_review). The batch
 * is re-opened (complete = false) before this returns; a held batch gets no jobs until approved.
 */
export async function retryBatch(deps: OpsDeps, batchId: string): Promise<{ requeued: number }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const ids = await deps.redis.zrange(k.batchState(batchId, 'failed'), 0, -1);
  const byRound = new Map<number, { transferId: string; from: Chain }[]>();
  let requeued = 0;
  for (const id of ids) {
    const rec = await store.load(batchId, id);
    if (!rec || rec.state !== 'failed') continue;
    const round = Number(rec.raw['round'] ?? 0) + 1;
    const res = await store.transition(batchId, id, {
      expected: ['failed'],
      to: 'queued',
      fields: { round, reestimate: 1 },
      clear: PAYLOAD_FIELDS,
    });
    if (!res.ok) continue;
    requeued++;
    const list = byRound.get(round) ?? [];
    list.push({ transferId: id, from: rec.from });
    byRound.set(round, list);
  }
  if (batch['held'] !== '1') {
    for (const [round, transfers] of byRound) await deps.jobs.addTransfers(batchId, transfers, round);
  }
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'retry',
    batch: batchId,
    detail: `re-queued ${requeued} failed transfer(s)`,
  });
  return { requeued };
}

/**
 * Settles a `needs_review` transfer after the operator checked the chain. `--not-sent` is refused
 * while the signed permit or transaction could still execute.
 */
export async function resolveTransfer(
  deps: OpsDeps,
  batchId: string,
  transferId: string,
  decision: { submitted: string } | { notSent: true },
): Promise<{ state: 'submitted' | 'failed' }> {
  await requireBatch(deps, batchId);
  const now = (deps.now ?? Date.now)();
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  const rec = await store.load(batchId, transferId);
  if (!rec)
    throw new NotFoundError('USDC_TRANSFER_NOT_FOUND', `transfer ${transferId} is not in batch ${batchId}`);
  if (rec.state !== 'needs_review') {
    throw new ValidationError(
      'USDC_RESOLVE_STATE',
      `transfer ${transferId} is ${rec.state}, not needs_review`,
    );
  }
  let to: 'submitted' | 'failed';
  let fields: Record<string, string>;
  if ('submitted' in decision) {
    if (!/^[A-Za-z0-9_.:-]{1,200}$/.test(decision.submitted)) {
      throw new ValidationError('USDC_USAGE_INTENT', 'the intent id has characters an intent id never has');
    }
    to = 'submitted';
    fields = { intent_id: decision.submitted, error_code: '', error_message: '', resolved_by: deps.actor };
  } else {
    const deadline = rec.raw['permit_deadline'] ? Number(rec.raw['permit_deadline']) * 1000 : 0;
    const expires = rec.raw['solana_expires_at'] ? Date.parse(rec.raw['solana_expires_at']) : 0;
    const live = Math.max(deadline, Number.isFinite(expires) ? expires : 0);
    const hasUnboundedTx = Boolean(rec.raw['solana_signed']) && !rec.raw['solana_expires_at'];
    if (hasUnboundedTx) {
      throw new ValidationError(
        'USDC_RESOLVE_TOO_EARLY',
        'the signed Solana transaction has no known expiry; confirm on chain and resolve with --submitted, or wait for the service status',
      );
    }
    if (live > now) {
      throw new ValidationError(
        'USDC_RESOLVE_TOO_EARLY',
        `its signed ${deadline >= live ? 'permit' : 'transaction'} could still execute until ${new Date(live).toISOString()}; --not-sent is accepted from then on`,
      );
    }
    to = 'failed';
    fields = {
      error_code: 'resolved_not_sent',
      error_message: `an operator found it not sent (${deps.actor})`,
      resolved_by: deps.actor,
    };
  }
  const res = await store.transition(batchId, transferId, { expected: ['needs_review'], to, fields });
  if (!res.ok)
    throw new ValidationError('USDC_RESOLVE_STATE', `transfer ${transferId} changed state meanwhile`);
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'resolve',
    batch: batchId,
    detail: `${transferId} → ${to}${'submitted' in decision ? ` (${decision.submitted})` : ''}`,
  });
  return { state: to };
}

/**
 * Cancels the batch's transfers that have not been sent: those still `queued` become `failed`
 * (`cancelled`). Transfers in progress are not cut off; a queued transfer holds no live payload.
 * The batch's hold is left as it is.
 */
export async function cancelBatch(deps: OpsDeps, batchId: string): Promise<{ cancelled: number }> {
  await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  const store = createTransferStore({ redis: deps.redis, prefix: deps.prefix });
  let cancelled = 0;
  for (;;) {
    const ids = await deps.redis.zrange(k.batchState(batchId, 'queued'), 0, 999);
    if (ids.length === 0) break;
    let moved = 0;
    for (const id of ids) {
      const res = await store.transition(batchId, id, {
        expected: ['queued'],
        to: 'failed',
        fields: { error_code: 'cancelled', error_message: `cancelled by ${deps.actor}` },
      });
      if (res.ok) moved++;
    }
    cancelled += moved;
    if (moved === 0) break;
  }
  // A held batch stays held: only `approve` releases a hold (PRODUCT.md §5 promise 5). Setting
  // `held` to 0 here once let `retry` re-queue the cancelled rows with jobs, paying them unapproved.
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'cancel',
    batch: batchId,
    detail: `cancelled ${cancelled} unsent transfer(s)`,
  });
  return { cancelled };
}

/** Releases a batch held for approval: its queued transfers get their jobs. */
export async function approveBatch(
  deps: OpsDeps,
  batchId: string,
): Promise<{ released: number; already: boolean }> {
  const batch = await requireBatch(deps, batchId);
  const k = keys(deps.prefix);
  if (batch['held'] !== '1') return { released: 0, already: true };
  await deps.redis.hset(
    k.batch(batchId),
    'held',
    '0',
    'approved_at',
    String((deps.now ?? Date.now)()),
    'approved_by',
    deps.actor,
  );
  const released = await addJobsForQueuedTransfers(
    { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs },
    batchId,
  );
  await recordAudit(deps.redis, deps.prefix, {
    actor: deps.actor,
    action: 'approve',
    batch: batchId,
    detail: `released ${released} transfer(s)`,
  });
  return { released, already: false };
}

export async function setPaused(deps: Omit<OpsDeps, 'jobs'>, paused: boolean): Promise<void> {
  const k = keys(deps.prefix);
  if (paused) await deps.redis.set(k.paused, String((deps.now ?? Date.now)()));
  else await deps.redis.del(k.paused);
  await recordAudit(deps.redis, deps.prefix, { actor: deps.actor, action: paused ? 'pause' : 'resume' });
}
