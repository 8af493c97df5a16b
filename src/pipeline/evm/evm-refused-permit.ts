import type { EvmChain } from '../../domain/chains.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { NonceDoubt, NonceReading } from '../../signing/types.ts';
import { addEvidence, jittered, otherTransfer, wait } from '../context.ts';
import { settleUnusedPermit } from './evm-settle-review.ts';
import { pastDeadline } from '../outcomes.ts';
import type { NonceSettleOutcome } from '../pipeline-deps.ts';
import type { OwnerTurn } from './owner-turn.ts';

/*
 * What happens after the service refused the FIRST send of a permit: the one place that decides.
 *
 * A refused first send never moved money, so the permit is dead and the transfer may sign again.
 * But the refusal alone does not say whether it was about the nonce, and the chain says so only
 * after a while: an RPC node may answer seconds behind the service, so an outside signer's use of
 * our nonce shows there late. The transfer keeps its (chain, owner) lease — extended, so no other
 * transfer is handed the same nonce meanwhile — and re-reads nonces(owner) at the RPC's head block,
 * with backoff, for at most the settle window (NONCE_SETTLE_WINDOW_MS) after the refusal. With n our
 * nonce and c the chain's, a reading "as new as the refusal" being one at a block whose timestamp is
 * not before the refusal:
 *
 * 1. moved — c > n (at a block as new as the refusal; at any block once the window is over):
 *    someone else used our nonce. The lease and the pool move to c, for every worker and process,
 *    and the transfer signs again with c. Logged (warn) and counted as a nonce refusal.
 * 2. below — c < n at a block as new as the refusal, with permits presumed used (answers lost) at
 *    nonces ≥ c: the service refuses every later nonce until they settle, and no permit may be
 *    signed at or below one of them while it could still execute.
 *    a. One could still execute (its deadline is not past at that block): the pool is held until
 *       its deadline, or until the chain moves past c; this transfer and every other of the owner
 *       wait `queued` with the reason. Nothing fails, nothing is signed at the old nonce.
 *    b. All are past their deadlines at that block: they provably never executed. Their transfers
 *       become `failed` (expired_unused, safe to retry), the pool moves back to c, and this
 *       transfer signs again with c.
 * 3. final — the window is over and the newest reading as new as the refusal shows c = n: the
 *    refusal was not about the nonce. The nonce goes back to the pool; the transfer fails with the
 *    service's reason. (So does a chain without RPC, which cannot tell.)
 * 4. unknown — the window is over with no reading as new as the refusal (an RPC further behind
 *    than the window, or failing), or with c < n and nothing to explain it (permits the service
 *    accepted and has not mined yet): nothing is concluded. The pool is held briefly, the transfer
 *    waits `queued` and tries again with a fresh permit, until the 3-minute budget of transient
 *    failures (docs/promises.md, promise 2) makes the refusal final.
 *
 * An RPC that cannot say which block it answered from proves nothing: its answers are ignored.
 */

export type Refusal = { readonly nonce: bigint; readonly at: number; readonly reason: string };

export type RefusalVerdict =
  /** Sign again with the lease's (moved) nonce. */
  | { readonly kind: 'resign'; readonly nonce: bigint }
  /** The refusal stands: the lease was released; fail with the service's reason (and the note). */
  | { readonly kind: 'final'; readonly note: string }
  /** The lease was released and the pool held: wait `queued`. `transient` keeps the 3-minute clock. */
  | { readonly kind: 'wait'; readonly delayMs: number; readonly reason: string; readonly transient: boolean };

type Watch =
  | { readonly kind: 'no_rpc' }
  | { readonly kind: 'moved'; readonly reading: NonceReading }
  | { readonly kind: 'below'; readonly reading: NonceReading; readonly doubts: readonly NonceDoubt[] }
  | { readonly kind: 'at_ours'; readonly reading: NonceReading }
  | {
      readonly kind: 'unknown';
      readonly reading: NonceReading | undefined;
      readonly error: string | undefined;
    };

/** First re-read this soon after the refusal, then twice as long each time, up to the cap. */
const FIRST_READ_MS = 250;
const MAX_READ_PAUSE_MS = 2_000;
/** The lease (60 s) is extended at least this often while the chain is watched. */
const EXTEND_EVERY_MS = 5_000;
/** How long the pool is held when the chain could not tell: short, it is only to stop a cascade. */
const UNKNOWN_HOLD_MS = 5_000;
/** A held transfer looks again at least this often (its acquire reads the chain: a move ends the hold). */
export const HELD_RECHECK_MS = 15_000;

/**
 * Whether `reading` is at a block at least as new as the refusal at `atMs`. Headers carry whole
 * seconds, and a block is stamped with (at most) the second it was made in: so only a stamp at or
 * after the refusal's instant proves the block was made after it. A block stamped with the
 * refusal's own second (refused at s.650, stamped s) may have been made at s.100, before the
 * service looked: it is not as new, and the wait goes on to the next second's block.
 */
export function isAsNewAs(reading: NonceReading, atMs: number): boolean {
  return reading.block.timestamp * 1000n >= BigInt(atMs);
}

/** Re-reads nonces(owner) at the RPC's head block until a reading decides, or the window is over. */
async function watchChain(turn: OwnerTurn, refusal: Refusal): Promise<Watch> {
  const { ctx, evm, chain, lease } = turn;
  const owner = turn.signer.address;
  const end = refusal.at + ctx.policy.nonceSettleWindowMs;
  let pause = FIRST_READ_MS;
  let extendedAt = -Infinity;
  let fresh: NonceReading | undefined;
  let moved: NonceReading | undefined;
  let error: string | undefined;
  for (;;) {
    if (ctx.now() - extendedAt >= EXTEND_EVERY_MS) {
      await lease.extend({ refusedAt: refusal.at });
      extendedAt = ctx.now();
    }
    let reading: NonceReading | undefined;
    try {
      reading = await evm.chain.permitNonceAtHead(chain, owner);
      if (reading === undefined) return { kind: 'no_rpc' };
    } catch (err) {
      error = errorMessage(err);
    }
    if (reading) {
      const asNew = isAsNewAs(reading, refusal.at);
      if (asNew) fresh = reading;
      if (reading.nonce > refusal.nonce && (!moved || reading.nonce > moved.nonce)) moved = reading;
      if (moved && (asNew || ctx.now() >= end)) return { kind: 'moved', reading: moved };
      if (asNew && reading.nonce < refusal.nonce) {
        const doubts = await evm.nonces.doubts(chain, owner, reading.nonce);
        if (doubts.length > 0) return { kind: 'below', reading, doubts };
      }
    }
    const left = end - ctx.now();
    if (left <= 0) break;
    await wait(ctx, Math.min(pause, left));
    pause = Math.min(pause * 2, MAX_READ_PAUSE_MS);
  }
  if (moved) return { kind: 'moved', reading: moved };
  if (fresh && fresh.nonce === refusal.nonce) return { kind: 'at_ours', reading: fresh };
  return { kind: 'unknown', reading: fresh, error };
}

/** The chain settles the refusal of our permit at `refusal.nonce`; see the rules above. */
export async function afterRefusedPermit(turn: OwnerTurn, refusal: Refusal): Promise<RefusalVerdict> {
  const { ctx, chain, lease } = turn;
  const owner = turn.signer.address;
  const watch = await watchChain(turn, refusal);
  const waitedMs = Math.max(0, ctx.now() - refusal.at);
  const settling: Settling = {
    facts: { chain, owner, nonce: refusal.nonce.toString(), waitedMs },
    settled: (outcome) => ctx.deps.metrics?.nonceSettled(chain, outcome, waitedMs),
  };
  const { facts, settled } = settling;
  switch (watch.kind) {
    case 'no_rpc':
      await lease.release();
      settled('final');
      return { kind: 'final', note: ' (no RPC for this chain to tell whether the nonce was used elsewhere)' };
    case 'moved':
      return await signedElsewhere(turn, refusal, watch.reading, settling);
    case 'below':
      return await belowPresumedUsed(turn, watch.reading, watch.doubts, settling);
    case 'at_ours':
      await lease.release();
      settled('final');
      ctx.log.info({ ...facts, block: watch.reading.block.number.toString() }, 'permit refusal is final');
      return { kind: 'final', note: '' };
    case 'unknown': {
      settled('unknown');
      const seconds = Math.round(ctx.policy.nonceSettleWindowMs / 1000);
      ctx.log.warn(
        { ...facts, chainNonce: watch.reading?.nonce.toString(), rpcError: watch.error },
        'the chain could not tell why a permit was refused',
      );
      if (pastDeadline(ctx)) {
        await lease.release();
        return {
          kind: 'final',
          note: ` (the chain could not tell within ${seconds} s whether the nonce was used elsewhere)`,
        };
      }
      const reason = `${chain} permits of ${owner} wait: nonce ${refusal.nonce} was refused (${refusal.reason}) and the chain could not tell within ${seconds} s whether it was used elsewhere; trying again`;
      await addEvidence(ctx, reason);
      await lease.holdPool({
        ms: UNKNOWN_HOLD_MS,
        chainNonce: watch.reading?.nonce ?? refusal.nonce,
        reason,
      });
      return { kind: 'wait', delayMs: jittered(ctx, UNKNOWN_HOLD_MS), reason, transient: true };
    }
  }
}

type Facts = { chain: EvmChain; owner: string; nonce: string; waitedMs: number };

/** What a refusal's settling logs and counts: its facts, and the metric of its outcome. */
type Settling = { readonly facts: Facts; readonly settled: (o: NonceSettleOutcome) => void };

/** Rule 1: the chain's nonce moved past ours. */
async function signedElsewhere(
  turn: OwnerTurn,
  refusal: Refusal,
  reading: NonceReading,
  { facts, settled }: Settling,
): Promise<RefusalVerdict> {
  const { ctx, lease } = turn;
  await lease.moveTo(reading.nonce);
  settled('moved');
  ctx.log.warn(
    {
      ...facts,
      chainNonce: reading.nonce.toString(),
      block: reading.block.number.toString(),
      blockTimestamp: reading.block.timestamp.toString(),
    },
    'permit nonce moved under the worker (the owner signed elsewhere); signing again with the chain nonce',
  );
  await addEvidence(
    ctx,
    `permit nonce ${refusal.nonce} refused (${refusal.reason}); at block ${reading.block.number} the chain's nonce is ${reading.nonce}: used elsewhere, signing again with ${reading.nonce}`,
  );
  return { kind: 'resign', nonce: reading.nonce };
}

/** Rule 2: the chain is below our nonce, behind permits presumed used. */
async function belowPresumedUsed(
  turn: OwnerTurn,
  reading: NonceReading,
  doubts: readonly NonceDoubt[],
  settling: Settling,
): Promise<RefusalVerdict> {
  const { ctx, evm, chain, lease } = turn;
  const owner = turn.signer.address;
  const { facts, settled } = settling;
  const live = doubts.filter((d) => d.deadline >= reading.block.timestamp);
  const chainNonce = reading.nonce;
  if (live.length === 0) {
    for (const d of doubts) {
      const [batchId = '', transferId = ''] = d.holder.split('/');
      await settleUnusedPermit({ ...turn, ctx: otherTransfer(ctx, batchId, transferId), owner }, d, reading);
    }
    // Recorded while we looked (a transfer the queue gave up on): judge those too before signing.
    const left = await evm.nonces.doubts(chain, owner, chainNonce);
    if (left.length > 0) return await belowPresumedUsed(turn, reading, left, settling);
    await lease.moveTo(chainNonce);
    settled('rewound');
    ctx.log.warn(
      { ...facts, chainNonce: chainNonce.toString(), settled: doubts.map((d) => d.holder) },
      'presumed-used permits below our nonce expired unused; the nonce pool moved back',
    );
    await addEvidence(
      ctx,
      `permit nonce ${facts.nonce} refused; the chain's nonce is ${chainNonce}, below presumed-used permits that expired unused: signing again with ${chainNonce}`,
    );
    return { kind: 'resign', nonce: chainNonce };
  }
  const last = live.reduce((a, b) => (b.deadline > a.deadline ? b : a));
  const until = new Date(Number(last.deadline) * 1000).toISOString();
  const reason = `${chain} permits of ${owner} wait: the permit of transfer ${last.holder} at nonce ${last.nonce} lost its answer and could still execute until ${until}; the chain is at nonce ${chainNonce}, and no permit is signed at or below one that may still be used`;
  const holdMs = (Number(last.deadline) + 1) * 1000 - ctx.now() + ctx.policy.settleMarginMs;
  await lease.holdPool({ ms: Math.max(1_000, holdMs), chainNonce, reason });
  settled('held');
  ctx.log.warn(
    { ...facts, chainNonce: chainNonce.toString(), blockedBy: last.holder, until },
    'permits of this owner wait for a presumed-used permit to settle',
  );
  await addEvidence(ctx, `permit nonce ${facts.nonce} refused; ${reason}`);
  return {
    kind: 'wait',
    delayMs: jittered(ctx, Math.min(Math.max(1_000, holdMs), HELD_RECHECK_MS)),
    reason,
    transient: false,
  };
}
