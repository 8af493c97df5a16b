import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.ts';
import { isEvmChain, type EvmChain } from '../domain/chains.ts';
import { bpsOf, formatUsdc } from '../domain/money.ts';
import { isFinalState, type TransferState } from '../domain/transfer.ts';
import type { Logger } from '../log/logger.ts';
import type { PermitPayload, ServiceClient } from '../service/types.ts';
import type { ChainReader, EvmSigner, NonceLease, NonceManager, SolanaSigner } from '../signing/types.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import type { SpendLimit } from '../store/spend-limit.ts';
import type { ApprovalGate } from '../store/batch-hold.ts';
import { asServiceFailure, describeFailure, type ServiceFailure } from './failure.ts';
import { backoffMs, DEFAULT_POLICY, type PipelinePolicy } from './policy.ts';
import { holdUnlessCleared } from './recipient-check.ts';

/**
 * One transfer's steps: estimate → fee guard → (EVM) permit from the nonce manager → transfer, or
 * (SOLANA) build-tx → policy check → sign → submit. Every step's result is saved in the transfer
 * record before the next step runs, so a crashed or stalled job, run again, resumes from the saved
 * steps: the queue delivers at least once; these records are what make that safe.
 *
 * The money rules (PRODUCT.md §5, promise 1), in terms of the saved fields:
 * - `sends` counts sends of the current payload *begun*; `send_state=sending` is written before
 *   each call, so a crash mid-call is seen on resume and counts as an uncertain send.
 * - `uncertain=1` once any send of the current payload may have been processed (an ambiguous answer,
 *   or a crash mid-send). From then on a refusal proves nothing: the transfer ends `needs_review`.
 * - A new payload (permit / built transaction) is made only while `uncertain` is 0 and the old one
 *   cannot execute: it was never sent, every send was refused, or it was never processed.
 */
export type PipelineDeps = {
  readonly config: Config;
  readonly store: TransferStore;
  readonly service: ServiceClient;
  readonly evm?: { signer: EvmSigner; nonces: NonceManager; chain: ChainReader } | undefined;
  readonly solana?: SolanaSigner | undefined;
  readonly logger: Logger;
  readonly policy?: PipelinePolicy;
  readonly hooks?: PipelineHooks;
  /** True while an operator has paused all processing. */
  readonly isPaused?: () => Promise<boolean>;
  /** `MAX_DAILY_USDC`, when set: reserved before a payload is made, released if nothing was sent. */
  readonly spendLimit?: SpendLimit | undefined;
  /** Held batches and recipients removed from the address book: checked before a payload is made. */
  readonly approvals?: ApprovalGate | undefined;
  readonly now?: () => number;
  readonly random?: () => number;
};

export type PipelineHooks = {
  /** The batch became complete (every transfer final); `generation` counts completions. */
  onBatchCompleted?(batchId: string, generation: number): Promise<void> | void;
  /** A transfer was submitted: follow its intent. */
  onSubmitted?(batchId: string, transferId: string, intentId: string): Promise<void> | void;
  /** A transfer ended needs_review with a payload that may settle itself after `at` (ms). */
  onNeedsReview?(batchId: string, transferId: string, settleAt: number | null): Promise<void> | void;
  /** The service answered 429: slow the whole queue for `ms`. */
  onRateLimited?(ms: number): Promise<void> | void;
};

/** What the queue layer should do with the job. */
export type StepOutcome =
  | { readonly kind: 'done'; readonly state: TransferState }
  | { readonly kind: 'later'; readonly delayMs: number; readonly reason: string };

type Ctx = {
  readonly deps: PipelineDeps;
  readonly policy: PipelinePolicy;
  readonly now: () => number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly batchId: string;
  readonly transferId: string;
};

class Later extends Error {
  readonly delayMs: number;
  readonly reason: string;
  constructor(delayMs: number, reason: string) {
    super(reason);
    this.delayMs = delayMs;
    this.reason = reason;
  }
}

// The processing lock outlives a healthy job's renewals by far, and a dead process's by ~30 s
// (like BullMQ's own job lock), so a crashed transfer resumes on another worker soon.
const LOCK_TTL_MS = 30_000;
const LOCK_RENEW_MS = 10_000;

export async function runTransfer(
  deps: PipelineDeps,
  batchId: string,
  transferId: string,
  signal: AbortSignal = new AbortController().signal,
  options: { settleOnly?: boolean } = {},
): Promise<StepOutcome> {
  const lockLost = new AbortController();
  const ctx: Ctx = {
    deps,
    policy: deps.policy ?? DEFAULT_POLICY,
    now: deps.now ?? Date.now,
    signal: AbortSignal.any([signal, lockLost.signal]),
    log: deps.logger.child({ batchId, transferId }),
    batchId,
    transferId,
  };
  // One job at a time per transfer, whatever queued it: two runs of one transfer at once could
  // each build and sign a payload. The queue's own lock is per job, so this one is per transfer.
  const token = randomUUID();
  if (!(await deps.store.lock(batchId, transferId, token, LOCK_TTL_MS))) {
    return { kind: 'later', delayMs: 1_000, reason: 'another job is processing this transfer' };
  }
  const renew = setInterval(() => {
    deps.store.relock(batchId, transferId, token, LOCK_TTL_MS).then(
      (ok) => {
        if (!ok) lockLost.abort();
      },
      () => {},
    );
  }, LOCK_RENEW_MS);
  try {
    if (options.settleOnly) {
      const rec = await deps.store.load(batchId, transferId);
      if (!rec || rec.state !== 'needs_review') return { kind: 'done', state: rec?.state ?? 'failed' };
    }
    return await step(ctx);
  } catch (err) {
    if (err instanceof Later) return { kind: 'later', delayMs: err.delayMs, reason: err.reason };
    throw err;
  } finally {
    clearInterval(renew);
    await deps.store.unlock(batchId, transferId, token).catch(() => {});
  }
}

async function step(ctx: Ctx): Promise<StepOutcome> {
  const { store } = ctx.deps;
  let rec = await store.load(ctx.batchId, ctx.transferId);
  if (!rec) {
    ctx.log.warn('job for a transfer that has no record; nothing to do');
    return { kind: 'done', state: 'failed' };
  }
  if (rec.state === 'needs_review') return await settleNeedsReview(ctx, rec);
  if (isFinalState(rec.state)) return { kind: 'done', state: rec.state };

  if (await ctx.deps.isPaused?.()) throw new Later(2_000, 'processing is paused');
  if (rec.state === 'queued') {
    const moved = await store.transition(ctx.batchId, ctx.transferId, {
      expected: ['queued'],
      to: 'in_progress',
      fields: rec.raw['first_seen_at'] ? {} : { first_seen_at: ctx.now() },
      clear: ['wait_reason'],
    });
    // Already `in_progress`: this run holds the transfer's lock, so no other run is on it; it goes
    // on from the saved steps rather than ending a job whose transfer would then be left behind.
    if (!moved.ok && moved.current !== 'in_progress') {
      return { kind: 'done', state: moved.current ?? 'failed' };
    }
    rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
  }

  // A crash between "sending" and the answer: that send may have been processed.
  if (rec.raw['send_state'] === 'sending') {
    await addEvidence(
      ctx,
      'a send was interrupted (worker stopped before the answer); its outcome is unknown',
    );
    await store.save(ctx.batchId, ctx.transferId, { uncertain: 1, send_state: '' });
    rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
  }

  const hasPayload = Boolean(rec.raw['permit'] || rec.raw['solana_signed']);
  if (!hasPayload) {
    const guarded = await estimateAndGuard(ctx, rec);
    if (guarded) return guarded;
    const held = await holdUnlessCleared(ctx.deps, rec);
    if (held) return held;
    await reserveDailySpend(ctx, rec);
  }
  if (rec.from === 'SOLANA') return await solanaFlow(ctx);
  if (isEvmChain(rec.from)) return await evmFlow(ctx, rec.from);
  return await finish(ctx, 'failed', {
    error_code: 'unsupported_route',
    error_message: `cannot send from ${rec.from}`,
  });
}

// ---------------------------------------------------------------------------------------------
// Estimate and fee guard

async function estimateAndGuard(ctx: Ctx, rec: TransferRecord): Promise<StepOutcome | undefined> {
  const { config, store, service } = ctx.deps;
  let fee = rec.feeTotal;
  // `retry` asks for a fresh estimate: fees move, and the guard must judge today's fee.
  if (fee === null || rec.raw['reestimate'] === '1') {
    try {
      const est = await service.estimate({ from: rec.from, to: rec.to, amount: rec.amount });
      await store.saveEstimate(ctx.batchId, ctx.transferId, est.fee, est.netReceive);
      if (rec.raw['reestimate']) await store.save(ctx.batchId, ctx.transferId, { reestimate: '' });
      fee = est.fee.total;
    } catch (err) {
      const f = asServiceFailure(err);
      if (!f) throw err;
      if (f.kind === 'rejected') {
        return await finish(ctx, 'failed', {
          error_code: 'estimate_refused',
          error_message: `the service refused the estimate: ${describeFailure(f)}`,
        });
      }
      // Estimating is safe to repeat: wait and try again, within the transient deadline.
      return await transientOrFinal(ctx, rec, f, 'estimate');
    }
  }
  const capBps = config.maxFeeBps;
  const bps = bpsOf(fee, rec.amount);
  if (bps > capBps) {
    return await finish(ctx, 'rejected', {
      error_code: 'fee_too_high',
      error_message: `estimated fee ${formatUsdc(fee)} USDC is ${bps} bps of ${formatUsdc(rec.amount)}, over MAX_FEE_BPS ${capBps}`,
    });
  }
  if (config.maxFeeUsdc !== undefined && fee > config.maxFeeUsdc) {
    return await finish(ctx, 'rejected', {
      error_code: 'fee_too_high',
      error_message: `estimated fee ${formatUsdc(fee)} USDC is over MAX_FEE_USDC ${formatUsdc(config.maxFeeUsdc)}`,
    });
  }
  return undefined;
}

/**
 * The rolling 24-hour cap, checked atomically at the moment before a payload is made: over it, the
 * transfer waits `queued` with the reason shown, and goes when room frees up.
 */
async function reserveDailySpend(ctx: Ctx, rec: TransferRecord): Promise<void> {
  const limit = ctx.deps.spendLimit;
  if (!limit || rec.raw['spend_reserved'] === '1') return;
  const res = await limit.reserve(`${ctx.batchId}/${ctx.transferId}`, rec.amount);
  if (res.ok) {
    await ctx.deps.store.save(ctx.batchId, ctx.transferId, { spend_reserved: 1 });
    return;
  }
  const at = new Date(res.retryAt).toISOString();
  await ctx.deps.store.transition(ctx.batchId, ctx.transferId, {
    expected: ['in_progress'],
    to: 'queued',
    fields: {
      wait_reason: `MAX_DAILY_USDC: ${formatUsdc(res.used)} of ${formatUsdc(limit.cap)} USDC sent in the last 24 h; waiting (room frees up by ${at})`,
    },
    // Waiting on the cap is not a transient failure: the 3-minute clock starts when it goes.
    clear: ['first_seen_at'],
  });
  throw new Later(Math.max(1_000, Math.min(60_000, res.retryAt - ctx.now())), 'daily limit');
}

/** A transient failure before any payload exists: wait, or fail once the deadline has passed. */
async function transientOrFinal(
  ctx: Ctx,
  rec: TransferRecord,
  f: ServiceFailure,
  what: string,
): Promise<StepOutcome> {
  if (f.kind === 'rate_limited') await ctx.deps.hooks?.onRateLimited?.(f.retryAfterMs ?? 1_000);
  if (pastDeadline(ctx, rec)) {
    return await finish(ctx, 'failed', {
      error_code: 'service_unavailable',
      error_message: `${what} kept failing for ${Math.round(ctx.policy.transientDeadlineMs / 1000)} s: ${describeFailure(f)}`,
    });
  }
  const delay =
    f.kind === 'rate_limited'
      ? (f.retryAfterMs ?? 1_000)
      : backoffMs(ctx.policy, rec.attempts, ctx.deps.random);
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, { last_error: describeFailure(f).slice(0, 300) });
  await moveBackToQueued(ctx, `${what} failed (${f.kind}); retrying`);
  throw new Later(delay, `${what} ${f.kind}`);
}

function pastDeadline(ctx: Ctx, rec: TransferRecord): boolean {
  const first = Number(rec.raw['first_seen_at'] ?? ctx.now());
  return ctx.now() - first >= ctx.policy.transientDeadlineMs;
}

async function moveBackToQueued(ctx: Ctx, reason: string): Promise<void> {
  await ctx.deps.store.transition(ctx.batchId, ctx.transferId, {
    expected: ['in_progress'],
    to: 'queued',
    fields: { wait_reason: reason },
  });
}

// ---------------------------------------------------------------------------------------------
// EVM: permit from the nonce manager → transfer

async function evmFlow(ctx: Ctx, chain: EvmChain): Promise<StepOutcome> {
  const evm = ctx.deps.evm;
  if (!evm) throw new Later(5_000, 'this worker has no EVM key');
  const holder = `${ctx.batchId}/${ctx.transferId}`;
  let lease: NonceLease;
  const waitSignal = AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.policy.leaseWaitMs)]);
  try {
    lease = await evm.nonces.acquire(chain, evm.signer.address, holder, { signal: waitSignal });
  } catch (err) {
    if (waitSignal.aborted || isAbort(err)) {
      // Another transfer of this (chain, owner) holds the nonce lease: yield the worker slot.
      throw new Later(
        50 + Math.round((ctx.deps.random ?? Math.random)() * 200),
        'waiting for the nonce lease',
      );
    }
    throw err;
  }
  let leaseSettled = false;
  const commit = async () => {
    if (!leaseSettled) await lease.commit();
    leaseSettled = true;
  };
  const release = async () => {
    if (!leaseSettled) await lease.release();
    leaseSettled = true;
  };
  try {
    return await evmSend(ctx, chain, lease, commit, release);
  } finally {
    // Leaving without a verdict (shutdown, a wait, a crash): the lease stays with this transfer
    // (re-entered on the next run) until it expires; nothing is released that could still execute.
  }
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
}

type Permit = PermitPayload;

async function evmSend(
  ctx: Ctx,
  chain: EvmChain,
  lease: NonceLease,
  commit: () => Promise<void>,
  release: () => Promise<void>,
): Promise<StepOutcome> {
  const { store, service } = ctx.deps;
  const evm = ctx.deps.evm!;
  let resigns = 0;
  let nonce = lease.nonce;
  let lastExtend = Date.now();
  // A kept (uncertain) permit may carry another nonce than this lease (its first lease lapsed):
  // then the lease's nonce was not used by it and goes back to the pool.
  const commitIfOurs = async (permit: Permit) => {
    if (BigInt(permit.nonce) === lease.nonce) await commit();
    else await release();
  };
  for (;;) {
    const rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
    let permit: Permit | undefined = rec.raw['permit']
      ? (JSON.parse(rec.raw['permit']) as Permit)
      : undefined;
    const uncertain = rec.raw['uncertain'] === '1';

    // A signed permit that was never processed and uses another nonce than our lease is dead
    // weight: discard it (nobody else holds it) and sign with the lease's nonce.
    if (permit && !uncertain && BigInt(permit.nonce) !== nonce) {
      await addEvidence(ctx, `discarded unsent permit with nonce ${permit.nonce} (lease nonce is ${nonce})`);
      permit = undefined;
    }
    const deadlineMs = permit ? Number(permit.deadline) * 1000 : 0;
    if (permit && !uncertain && deadlineMs - ctx.now() < 60_000) {
      // Too close to its deadline to be worth sending; never processed, so it can be replaced.
      await addEvidence(ctx, `replaced unsent permit (nonce ${permit.nonce}) near its deadline`);
      permit = undefined;
    }
    let gen = Number(rec.raw['payload_gen'] ?? 1);
    let fresh: Record<string, string | number> | undefined;
    if (!permit) {
      const deadline = BigInt(Math.floor(ctx.now() / 1000) + ctx.deps.config.permitDeadlineSeconds);
      permit = await evm.signer.signPermit({ chain, amount: rec.amount, nonce, deadline });
      gen = Number(rec.raw['payload_gen'] ?? 0) + 1;
      // Saved in the same write that marks its first send begun (beginSend).
      fresh = {
        permit: JSON.stringify(permit),
        permit_nonce: permit.nonce,
        permit_deadline: permit.deadline,
        payload_gen: gen,
        uncertain: 0,
        ambiguous: 0,
        unavailable: 0,
      };
    }

    // Keep the (chain, owner) lease through slow sends and waits. A lost lease means another
    // transfer may now be sending this owner's permits: step back and come again, in order.
    if (Date.now() - lastExtend > LEASE_EXTEND_AFTER_MS) {
      try {
        await lease.extend();
        lastExtend = Date.now();
      } catch (err) {
        if ((err as { code?: unknown }).code === 'USDC_NONCE_LEASE_LOST')
          throw new Later(500, 'nonce lease lost');
        throw err;
      }
    }
    const key = `${ctx.batchId}/${ctx.transferId}/${gen}`;
    await beginSend(ctx, rec, fresh);
    try {
      const res = await service.transfer(
        { from: chain, to: rec.to, amount: rec.amount, recipient: rec.recipient, permit },
        { idempotencyKey: key },
      );
      // `send_state` stays `sending` until the outcome itself is recorded (in the same write): a
      // crash in between must leave the payload uncertain, never look like an unsent permit.
      await commitIfOurs(permit);
      return await submitted(ctx, {
        intent_id: res.intentId,
        intent_status: res.status,
        tx_hash: res.txHash ?? '',
        send_state: '',
      });
    } catch (err) {
      const { after, f } = await afterFailedSend(ctx, err);
      if (after === 'resend') continue;
      if (after === 'refused_first') {
        // The permit can never execute. If the chain shows our nonce taken elsewhere, sign again.
        const fresh = resigns < ctx.policy.maxResigns ? await lease.refreshFromChain() : undefined;
        if (fresh !== undefined) {
          resigns++;
          await addEvidence(
            ctx,
            `permit nonce ${nonce} refused; the chain's nonce moved to ${fresh}: signing again`,
          );
          await store.save(ctx.batchId, ctx.transferId, { permit: '', uncertain: 0 });
          nonce = fresh;
          continue;
        }
        await release();
        return await finish(ctx, 'failed', {
          error_code: 'refused',
          error_message: `the service refused the transfer: ${describeFailure(f)}`,
        });
      }
      if (after === 'give_up_unprocessed') {
        await release();
        return await finish(ctx, 'failed', {
          error_code: 'service_unavailable',
          error_message: `the service did not process the transfer: ${describeFailure(f)}`,
        });
      }
      // needs_review: the permit may have executed. Its nonce is presumed used.
      await commitIfOurs(permit);
      return await needsReview(ctx, f, Number(permit.deadline) * 1000 + ctx.policy.settleMarginMs);
    }
  }
}

type AfterSend = 'resend' | 'refused_first' | 'give_up_unprocessed' | 'needs_review';

/**
 * The one decision after a failed send of a saved payload, from the client's classification and
 * the payload's history. Waits (in the job, holding the payload) before a re-send.
 */
async function afterFailedSend(ctx: Ctx, err: unknown): Promise<{ after: AfterSend; f: ServiceFailure }> {
  const { store } = ctx.deps;
  const f = asServiceFailure(err);
  if (!f) {
    // An unexpected local error after the request may have gone out: treat as uncertain.
    await store.save(ctx.batchId, ctx.transferId, { send_state: '', uncertain: 1 });
    throw err;
  }
  return { after: await decideAfterFailedSend(ctx, f), f };
}

async function decideAfterFailedSend(ctx: Ctx, f: ServiceFailure): Promise<AfterSend> {
  const { store } = ctx.deps;
  const rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
  const uncertainBefore = rec.raw['uncertain'] === '1';
  await addEvidence(ctx, `send ${rec.raw['sends'] ?? '?'} failed: ${describeFailure(f)}`);
  switch (f.kind) {
    case 'rejected':
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      return uncertainBefore ? 'needs_review' : 'refused_first';
    case 'ambiguous': {
      const n = await store.incr(ctx.batchId, ctx.transferId, 'ambiguous');
      await store.save(ctx.batchId, ctx.transferId, { send_state: '', uncertain: 1 });
      if (n > ctx.policy.maxAmbiguousResends || pastDeadline(ctx, rec)) return 'needs_review';
      await wait(ctx, backoffMs(ctx.policy, n, ctx.deps.random));
      return 'resend';
    }
    case 'rate_limited': {
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      const ms = f.retryAfterMs ?? 1_000;
      await ctx.deps.hooks?.onRateLimited?.(ms);
      if (pastDeadline(ctx, rec)) return uncertainBefore ? 'needs_review' : 'give_up_unprocessed';
      await wait(ctx, Math.min(ms, ctx.policy.backoffMaxMs));
      return 'resend';
    }
    case 'unavailable': {
      const n = await store.incr(ctx.batchId, ctx.transferId, 'unavailable');
      await store.save(ctx.batchId, ctx.transferId, { send_state: '' });
      if (n >= ctx.policy.maxUnavailableSends || pastDeadline(ctx, rec)) {
        return uncertainBefore ? 'needs_review' : 'give_up_unprocessed';
      }
      await wait(ctx, backoffMs(ctx.policy, n, ctx.deps.random));
      return 'resend';
    }
  }
}

/** Waits inside the job; on shutdown the job is parked with its payload saved. */
async function wait(ctx: Ctx, ms: number): Promise<void> {
  if (ctx.signal.aborted) throw new Later(ms, 'shutting down');
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    ctx.signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
  if (ctx.signal.aborted) throw new Later(0, 'shutting down');
}

// ---------------------------------------------------------------------------------------------
// SOLANA: build-tx → policy check → sign → submit

async function solanaFlow(ctx: Ctx): Promise<StepOutcome> {
  const { store, service } = ctx.deps;
  const signer = ctx.deps.solana;
  if (!signer) throw new Later(5_000, 'this worker has no Solana key');
  let rebuilds = 0;
  for (;;) {
    const rec = (await store.load(ctx.batchId, ctx.transferId)) as TransferRecord;
    const uncertain = rec.raw['uncertain'] === '1';
    let signed = rec.raw['solana_signed'] || undefined;
    let gen = Number(rec.raw['payload_gen'] ?? 1);
    let intentId = rec.raw['solana_intent'] ?? '';
    let fresh: Record<string, string | number> | undefined;
    let expiresAt = rec.raw['solana_expires_at'] ? Date.parse(rec.raw['solana_expires_at']) : NaN;
    if (signed && !uncertain && Number.isFinite(expiresAt) && expiresAt - ctx.now() < 5_000) {
      // Never processed and about to expire: it can be replaced.
      await addEvidence(
        ctx,
        `replaced unsent Solana transaction of intent ${rec.raw['solana_intent']} near its expiry`,
      );
      signed = undefined;
    }
    if (!signed) {
      if (rec.to === 'SOLANA' || !isEvmChain(rec.to)) {
        return await finish(ctx, 'failed', {
          error_code: 'unsupported_route',
          error_message: 'SOLANA → SOLANA',
        });
      }
      let built;
      try {
        built = await service.buildSolanaTx({
          to: rec.to,
          amount: rec.amount,
          fromWallet: signer.address,
          recipient: rec.recipient,
        });
      } catch (err) {
        const f = asServiceFailure(err);
        if (!f) throw err;
        if (f.kind === 'rejected') {
          return await finish(ctx, 'failed', {
            error_code: 'build_refused',
            error_message: `the service refused to build the transaction: ${describeFailure(f)}`,
          });
        }
        return await transientOrFinal(ctx, rec, f, 'build-tx');
      }
      const verdict = signer.check(built.transaction, {
        amount: rec.amount,
        recipient: rec.recipient,
        to: rec.to,
      });
      if (!verdict.ok) {
        return await finish(ctx, 'rejected', {
          error_code: 'policy_refused',
          error_message: `refused to sign the built transaction${
            verdict.instruction === null ? '' : ` (instruction ${verdict.instruction})`
          }: ${verdict.reason}`,
          solana_intent: built.intentId,
        });
      }
      signed = await signer.sign(built.transaction);
      gen = Number(rec.raw['payload_gen'] ?? 0) + 1;
      intentId = built.intentId;
      expiresAt = built.expiresAt ? Date.parse(built.expiresAt) : NaN;
      // Saved in the same write that marks its first send begun (beginSend).
      fresh = {
        solana_intent: built.intentId,
        solana_expires_at: built.expiresAt ?? '',
        solana_signed: signed,
        payload_gen: gen,
        uncertain: 0,
        ambiguous: 0,
        unavailable: 0,
      };
    }
    const key = `${ctx.batchId}/${ctx.transferId}/${gen}`;
    await beginSend(ctx, rec, fresh);
    try {
      const res = await service.submitSolanaTx(
        { intentId, signedTransaction: signed },
        { idempotencyKey: key },
      );
      return await submitted(ctx, {
        intent_id: res.intentId || intentId,
        intent_status: res.status,
        tx_signature: res.txSignature ?? '',
        send_state: '',
      });
    } catch (err) {
      const { after, f } = await afterFailedSend(ctx, err);
      if (after === 'resend') continue;
      if (after === 'refused_first') {
        // Refused on its first send: it never moved money. If it was refused because it expired,
        // a fresh one may be built (bounded); otherwise the refusal is the answer.
        const expired = Number.isFinite(expiresAt) && expiresAt <= ctx.now();
        if (expired && rebuilds < ctx.policy.maxRebuilds) {
          rebuilds++;
          await store.save(ctx.batchId, ctx.transferId, { solana_signed: '', uncertain: 0 });
          continue;
        }
        return await finish(ctx, 'failed', {
          error_code: 'refused',
          error_message: `the service refused the transaction: ${describeFailure(f)}`,
        });
      }
      if (after === 'give_up_unprocessed') {
        return await finish(ctx, 'failed', {
          error_code: 'service_unavailable',
          error_message: `the service did not process the transaction: ${describeFailure(f)}`,
        });
      }
      const settleAt = Number.isFinite(expiresAt) ? expiresAt + ctx.policy.settleMarginMs : null;
      return await needsReview(ctx, f, settleAt);
    }
  }
}

/**
 * Written durably before every send: on resume, `send_state=sending` means this send's outcome is
 * unknown. `attempts` (shown to operators) counts sends to the service across payloads.
 */
async function beginSend(
  ctx: Ctx,
  rec: TransferRecord,
  freshPayload?: Record<string, string | number>,
): Promise<void> {
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, {
    ...freshPayload,
    send_state: 'sending',
    sends: freshPayload ? 1 : Number(rec.raw['sends'] ?? 0) + 1,
    attempts: rec.attempts + 1,
  });
}

/** The nonce lease lives 60 s; it is extended when a send comes this long after the last. */
const LEASE_EXTEND_AFTER_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Final states

async function submitted(ctx: Ctx, fields: Record<string, string>): Promise<StepOutcome> {
  if (ctx.deps.spendLimit) {
    // Re-stamp the daily-cap reservation at the moment the payment was accepted.
    const rec = await ctx.deps.store.load(ctx.batchId, ctx.transferId);
    if (rec) await ctx.deps.spendLimit.reserve(`${ctx.batchId}/${ctx.transferId}`, rec.amount);
  }
  const out = await finish(ctx, 'submitted', { ...fields, error_code: '', error_message: '' });
  if (fields['intent_id'])
    await ctx.deps.hooks?.onSubmitted?.(ctx.batchId, ctx.transferId, fields['intent_id']);
  return out;
}

async function needsReview(ctx: Ctx, f: ServiceFailure, settleAt: number | null): Promise<StepOutcome> {
  const out = await finish(ctx, 'needs_review', {
    error_code: 'outcome_unknown',
    error_message: `the service may have executed this payment but its answer was lost (${describeFailure(f)}); check the chain, then use resolve`,
    ...(settleAt ? { settle_at: settleAt } : {}),
  });
  await ctx.deps.hooks?.onNeedsReview?.(ctx.batchId, ctx.transferId, settleAt);
  return out;
}

async function finish(
  ctx: Ctx,
  to: TransferState,
  fields: Record<string, string | number>,
): Promise<StepOutcome> {
  if ((to === 'failed' || to === 'rejected') && ctx.deps.spendLimit) {
    // Nothing was sent: give the reserved room back to the daily cap.
    await ctx.deps.spendLimit.release(`${ctx.batchId}/${ctx.transferId}`);
    fields = { ...fields, spend_reserved: '' };
  }
  const res = await ctx.deps.store.transition(ctx.batchId, ctx.transferId, {
    expected: ['in_progress', 'queued'],
    to,
    fields,
    clear: ['wait_reason'],
  });
  if (!res.ok) return { kind: 'done', state: res.current ?? to };
  ctx.log.info({ state: to, code: fields['error_code'] || undefined }, 'transfer final');
  if (res.completedGeneration !== null) {
    await ctx.deps.hooks?.onBatchCompleted?.(ctx.batchId, res.completedGeneration);
  }
  return { kind: 'done', state: to };
}

async function addEvidence(ctx: Ctx, line: string): Promise<void> {
  const rec = await ctx.deps.store.load(ctx.batchId, ctx.transferId);
  let list: string[] = [];
  try {
    list = JSON.parse(rec?.raw['evidence'] ?? '[]') as string[];
  } catch {
    list = [];
  }
  list.push(`${new Date(ctx.now()).toISOString()} ${line}`);
  await ctx.deps.store.save(ctx.batchId, ctx.transferId, { evidence: JSON.stringify(list.slice(-50)) });
}

// ---------------------------------------------------------------------------------------------
// Settling doubt without a human, where the facts allow

/**
 * A `needs_review` transfer whose payload is past its deadline or expiry: the chain (EVM: the
 * permit nonce still unused) or the service's status route (Solana) may prove it never moved
 * money — then it becomes `failed` (and `retry` may send it). Otherwise it stays, evidence added.
 */
export async function settleNeedsReview(ctx: Ctx, rec: TransferRecord): Promise<StepOutcome> {
  const settleAt = Number(rec.raw['settle_at'] ?? 0);
  if (!settleAt || rec.raw['settled'] === '1') return { kind: 'done', state: rec.state };
  if (ctx.now() < settleAt) throw new Later(settleAt - ctx.now(), 'waiting for the payload deadline');
  const { store } = ctx.deps;
  if (rec.raw['permit'] && isEvmChain(rec.from) && ctx.deps.evm) {
    const permit = JSON.parse(rec.raw['permit']) as Permit;
    const onChain = await ctx.deps.evm.chain.permitNonce(rec.from, permit.owner);
    if (onChain === undefined) {
      await addEvidence(ctx, 'cannot settle automatically: no RPC for this chain');
    } else if (onChain <= BigInt(permit.nonce)) {
      await addEvidence(
        ctx,
        `after the permit deadline, the chain's nonce is ${onChain} (permit nonce ${permit.nonce}): the permit never executed`,
      );
      await store.save(ctx.batchId, ctx.transferId, { settled: 1 });
      // The nonce was presumed used when the answer was lost; it is free after all.
      await ctx.deps.evm.nonces.rewind?.(rec.from, permit.owner, onChain);
      const res = await store.transition(ctx.batchId, ctx.transferId, {
        expected: ['needs_review'],
        to: 'failed',
        fields: {
          error_code: 'expired_unused',
          error_message: `the permit expired unused (chain nonce ${onChain} ≤ ${permit.nonce}); safe to retry`,
        },
      });
      if (res.ok && res.completedGeneration !== null) {
        await ctx.deps.hooks?.onBatchCompleted?.(ctx.batchId, res.completedGeneration);
      }
      return { kind: 'done', state: 'failed' };
    } else {
      await addEvidence(
        ctx,
        `after the permit deadline, the chain's nonce is ${onChain} > ${permit.nonce}: the nonce was used`,
      );
    }
  } else if (rec.raw['solana_intent']) {
    const intent = rec.raw['solana_intent'];
    try {
      const st = await ctx.deps.service.getIntentStatus(intent);
      if (st === undefined) {
        await addEvidence(ctx, `status route does not know intent ${intent}`);
      } else if (st.status === 'failed') {
        await addEvidence(ctx, `status route: intent ${intent} failed after its expiry`);
        await store.save(ctx.batchId, ctx.transferId, { settled: 1 });
        const res = await store.transition(ctx.batchId, ctx.transferId, {
          expected: ['needs_review'],
          to: 'failed',
          fields: { error_code: 'expired_unused', error_message: `intent ${intent} failed; safe to retry` },
        });
        if (res.ok && res.completedGeneration !== null) {
          await ctx.deps.hooks?.onBatchCompleted?.(ctx.batchId, res.completedGeneration);
        }
        return { kind: 'done', state: 'failed' };
      } else {
        await addEvidence(ctx, `status route: intent ${intent} is ${st.status}`);
        if (['detected', 'minted', 'complete'].includes(st.status)) {
          // The service itself shows our intent moving: it was paid, under this intent.
          await store.save(ctx.batchId, ctx.transferId, { settled: 1 });
          const res = await store.transition(ctx.batchId, ctx.transferId, {
            expected: ['needs_review'],
            to: 'submitted',
            fields: { intent_id: intent, intent_status: st.status, error_code: '', error_message: '' },
          });
          if (res.ok && res.completedGeneration !== null) {
            await ctx.deps.hooks?.onBatchCompleted?.(ctx.batchId, res.completedGeneration);
          }
          return { kind: 'done', state: 'submitted' };
        }
      }
    } catch (err) {
      await addEvidence(ctx, `status route unavailable: ${String((err as Error).message).slice(0, 120)}`);
    }
  }
  await store.save(ctx.batchId, ctx.transferId, { settled: 1 });
  return { kind: 'done', state: 'needs_review' };
}
