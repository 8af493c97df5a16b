import type { EvmChain } from '../../domain/chains.ts';
import { shortAddress } from '../../domain/addresses.ts';
import type { PermitPayload } from '../../service/types.ts';
import { NonceLeaseLostError, SIGNING_ERROR_CODES } from '../../signing/errors.ts';
import {
  NO_REFUSAL,
  nextPayloadGen,
  permitPatch,
  refusalPatch,
  type RunRecord,
  type StepsPatch,
} from '../../store/saved-steps.ts';
import { addEvidence, current, Later, saveStep, type Ctx } from '../context.ts';
import { reserveDailySpend } from '../daily-cap.ts';
import { afterRefusedPermit, type Refusal, type RefusalVerdict } from './evm-refused-permit.ts';
import { mayDiscardPermit } from './permit-discard.ts';
import { leaseAnOwner } from './evm-owner.ts';
import { holderOf, type OwnerTurn } from './owner-turn.ts';
import { PERMIT_MIN_LIFE_MS, preparePermit, signPermit } from './evm-permit.ts';
import { decideAfterRefusedPermit, type ChainVerdict } from '../failure-decision.ts';
import { describeFailure, type ServiceFailure } from '../failure.ts';
import {
  finish,
  keyReusedReview,
  moveBackToQueued,
  needsReview,
  pastDeadline,
  submitted,
  waitQueued,
} from '../outcomes.ts';
import { backoffMs } from '../policy.ts';
import type { EvmDeps, StepOutcome } from '../pipeline-deps.ts';
import { afterFailedSend, beginSend, LeaseNotConfirmed } from '../send-attempt.ts';

/*
 * EVM: the (chain, owner) nonce lease → a permit signed with its nonce → transfer. The lease is
 * held by the transfer (not the process), so permits of one owner reach the service one at a time
 * in nonce order; a crashed transfer re-enters its own lease. While another transfer's permit is
 * in flight, a waiting transfer may prepare the next one (evm-permit.ts preparePermit): when the
 * lease is handed to it, its saved permit is sent at once. What happens after a refused permit is
 * decided in evm-refused-permit.ts. Every step reads the transfer as the run carries it (Ctx.run).
 */

export async function evmFlow(ctx: Ctx, evm: EvmDeps, chain: EvmChain): Promise<StepOutcome> {
  const run = { ctx, evm, chain };
  ctx.report('sign', `choosing a ${chain} owner and taking its permit nonce`, true);
  const { signer, lease, reserved } = await leaseAnOwner(
    run,
    (owner) => async (nonce) => (await preparePermit({ ...run, signer: owner }, nonce)) !== undefined,
  );
  const turn: OwnerTurn = { ...run, signer, lease, reserved };
  try {
    await reserveDailyOrStepBack(turn);
    return await sendWithLease(turn);
  } catch (err) {
    // The lease lapsed and another transfer may now be sending this owner's permits: step back and
    // come again, in order. Leaving without a verdict otherwise (shutdown, a wait, a crash), the
    // lease stays with this transfer (re-entered on the next run) until it expires.
    if (err instanceof NonceLeaseLostError)
      throw new Later(500, 'the nonce lease lapsed; taking it again, in order', 'nonce_lease');
    throw err;
  }
}

/**
 * The daily cap is taken after the owner's balance (a row no owner can cover does not hold room
 * under the cap); over the cap, the lease and the balance go back before the transfer waits. Taken
 * once per transfer (`spend_reserved`), before its first send: a transfer that prepared its permit
 * took it then (evm-permit.ts), and this finds it taken.
 */
async function reserveDailyOrStepBack(turn: OwnerTurn): Promise<void> {
  const { ctx, evm, chain, signer, lease } = turn;
  try {
    await reserveDailySpend(ctx);
  } catch (err) {
    await lease.release();
    await evm.balances?.release(chain, signer.address, holderOf(ctx));
    throw err;
  }
}

function savedRefusal(rec: RunRecord, permit: PermitPayload): Refusal | undefined {
  const { refusal } = rec.steps;
  if (!refusal || refusal.nonce !== BigInt(permit.nonce)) return undefined;
  return { nonce: refusal.nonce, at: refusal.at, reason: refusal.reason };
}

/** The permit a send carries, its payload number, and the fields to save with its first send. */
type PermitToSend = {
  readonly permit: PermitPayload;
  readonly gen: number;
  /** Prepared while the permit before it was in flight, never sent: this is its first send. */
  readonly prepared: boolean;
  readonly fresh: StepsPatch | undefined;
};

/** Sends this transfer's permit (the kept one, or a new one at the lease's nonce) until a run ends. */
async function sendWithLease(turn: OwnerTurn): Promise<StepOutcome> {
  const { ctx, lease } = turn;
  let refusals = 0;
  const extended = { at: Date.now() };
  for (;;) {
    const found = await keptPermit(turn);
    if ('review' in found) return await mayHavePaid(turn, found.review);
    const kept = found.permit;
    const refusal = kept && savedRefusal(current(ctx), kept);
    if (refusal) {
      const out = await settleRefusal(turn, refusal, ++refusals);
      if (out) return out;
      continue;
    }
    const live = await unlessNearDeadline(ctx, kept);
    const toSend = await permitToSend(turn, live);
    // Keep the (chain, owner) lease through slow sends and waits: it lives twice WORKER_LOCK_MS,
    // and is extended when a send comes a third of WORKER_LOCK_MS after the last extension.
    if (Date.now() - extended.at > ctx.policy.holds.nonceLeaseExtendMs) {
      await lease.extend();
      extended.at = Date.now();
    }
    const out = await sendPermit(turn, toSend);
    if (out !== 'again') return out;
  }
}

/** The kept permit, or a new one signed with the lease's nonce (saved with its first send). */
async function permitToSend(turn: OwnerTurn, kept: PermitPayload | undefined): Promise<PermitToSend> {
  const { steps } = current(turn.ctx);
  if (kept) {
    const prepared = steps.prepared;
    return {
      permit: kept,
      gen: steps.payloadGen ?? 1,
      prepared,
      fresh: prepared ? { prepared: false } : undefined,
    };
  }
  const permit = await signPermit(turn, turn.lease.nonce, 'signed');
  const gen = nextPayloadGen(steps);
  // Saved in the same write that marks its first send begun (beginSend).
  return { permit, gen, prepared: false, fresh: permitPatch(permit, gen) };
}

/**
 * One send of the permit: the durable mark (with the lease confirmed in its round trip), the call,
 * and what its answer leads to; `again` to go round (a re-send, or a refusal to settle).
 */
async function sendPermit(turn: OwnerTurn, toSend: PermitToSend): Promise<StepOutcome | 'again'> {
  const { ctx, evm, chain, lease } = turn;
  const rec = current(ctx);
  const { permit, gen } = toSend;
  const idempotencyKey = `${ctx.batchId}/${ctx.transferId}/${gen}`;
  await markSendingOrStepBack(turn, toSend, idempotencyKey);
  try {
    const res = await ctx.deps.service.transfer(
      { from: chain, to: rec.to, amount: rec.amount, recipient: rec.recipient, permit },
      { idempotencyKey },
    );
    ctx.report(
      'answer',
      `accepted: intent ${res.intentId} (${res.status}), tx ${res.txHash ? shortAddress(res.txHash) : 'not given'}`,
    );
    // `send_state` stays `sending` until the outcome itself is recorded (in the same write): a
    // crash in between must leave the payload uncertain, never look like an unsent permit.
    if (BigInt(permit.nonce) === lease.nonce) await lease.commit();
    else await lease.release();
    // Before the outcome: a record with a tx hash has it on its reservation too (dropUnhashedReservation).
    // An entry this run reserved is written without a look (owner-balance.ts noteSent).
    const ours = turn.reserved === true && permit.owner === turn.signer.address;
    await evm.balances?.noteSent(chain, permit.owner, holderOf(ctx), {
      txHash: res.txHash ?? null,
      reserved: ours ? rec.amount : undefined,
    });
    ctx.deps.metrics?.ownerPaid?.(chain, permit.owner);
    return await submitted(ctx, {
      intentId: res.intentId,
      intentStatus: res.status,
      txHash: res.txHash ?? null,
      sendState: 'idle',
    });
  } catch (err) {
    const { after, f } = await afterFailedSend(ctx, err);
    if (after === 'resend') return 'again';
    if (after === 'refused_first') {
      // Saved before anything else: a run after a crash goes on settling, never re-sends it.
      await saveStep(ctx, refusalPatch(permit, ctx.now(), describeFailure(f)));
      return 'again';
    }
    if (after === 'key_reused') {
      // This permit was refused, so its nonce is free again, unless an earlier send of it may
      // have been processed: then it is kept, its nonce presumed used until the chain settles it.
      const uncertain = current(ctx).steps.uncertain;
      if (uncertain) await presumeNonceUsed(turn, permit);
      else await lease.release();
      return await keyReusedReview(ctx, f, { key: idempotencyKey, dead: uncertain ? {} : { permit: null } });
    }
    if (after === 'give_up_unprocessed') {
      await lease.release();
      return await finish(ctx, 'failed', {
        error: {
          code: 'service_unavailable',
          message: `the service did not process the transfer: ${describeFailure(f)}`,
        },
      });
    }
    return await presumedUsed(turn, permit, f);
  }
}

/**
 * Marks the send begun (send-attempt.ts beginSend). A lease handed over on a commit is confirmed
 * (and renewed) in the round trip of the sending mark; nothing is sent unless it is still ours at
 * this nonce (a failed confirmation is a no): then the mark is taken back and the run steps back
 * (NonceLeaseLostError).
 */
async function markSendingOrStepBack(
  turn: OwnerTurn,
  toSend: PermitToSend,
  idempotencyKey: string,
): Promise<void> {
  const { ctx, chain, lease } = turn;
  const { permit, prepared, fresh } = toSend;
  try {
    await beginSend(ctx, {
      call: `POST /sdk/v1/transfer (permit nonce ${permit.nonce})`,
      idempotencyKey,
      ...(prepared ? { payload: 'the prepared payload' } : {}),
      fresh,
      gate: { confirm: () => lease.confirm() },
    });
  } catch (err) {
    if (!(err instanceof LeaseNotConfirmed)) throw err;
    throw new NonceLeaseLostError(
      SIGNING_ERROR_CODES.nonceLeaseLost,
      `The ${chain} nonce lease handed to ${holderOf(ctx)} lapsed before it was confirmed`,
    );
  }
}

/**
 * The saved permit, unless it was never processed and uses another nonce than the lease (its first
 * lease lapsed, or it was prepared for a nonce the pool did not hand over: the permit before it was
 * released, or the pool moved): then it is dead weight, discarded (nobody else holds it) for one
 * with the lease's — once the chain confirms it cannot have paid (permit-discard.ts); if it may
 * have, `review` says what the chain showed.
 */
async function keptPermit(
  turn: OwnerTurn,
): Promise<{ readonly permit: PermitPayload | undefined } | { readonly review: string }> {
  const { ctx, lease } = turn;
  const { steps } = current(ctx);
  const { permit } = steps;
  if (!permit) return { permit: undefined };
  // A transfer's permits are all its one owner's (evm-owner.ts), the lease's owner.
  if (steps.uncertain || BigInt(permit.nonce) === lease.nonce) return { permit };
  const verdict = await mayDiscardPermit(turn, permit);
  if (!verdict.discard) return { review: verdict.evidence };
  const what = steps.prepared ? 'prepared' : 'unsent';
  await addEvidence(
    ctx,
    `discarded ${what} permit with nonce ${permit.nonce} (lease nonce is ${lease.nonce})`,
  );
  return { permit: undefined };
}

/**
 * A saved permit whose nonce the chain shows used, with nothing recorded to say another payload used
 * it: it may have paid, so nothing new is signed; an operator settles it with `resolve`. The lease's
 * nonce was not this permit's: it goes back.
 */
async function mayHavePaid(turn: OwnerTurn, evidence: string): Promise<StepOutcome> {
  await addEvidence(turn.ctx, evidence);
  await turn.lease.release();
  return await finish(turn.ctx, 'needs_review', {
    error: {
      code: 'outcome_unknown',
      message:
        'a saved permit whose nonce the chain shows used may have paid this transfer; check the chain, then use resolve',
    },
  });
}

/** A never-processed permit too close to its deadline to be worth sending is replaced. */
async function unlessNearDeadline(
  ctx: Ctx,
  permit: PermitPayload | undefined,
): Promise<PermitPayload | undefined> {
  if (!permit || current(ctx).steps.uncertain) return permit;
  if (Number(permit.deadline) * 1000 - ctx.now() >= PERMIT_MIN_LIFE_MS) return permit;
  await addEvidence(ctx, `replaced unsent permit (nonce ${permit.nonce}) near its deadline`);
  return undefined;
}

/** The chain's verdict on a refused permit, as the decision table names it. */
function chainVerdict(verdict: RefusalVerdict): ChainVerdict {
  if (verdict.kind === 'wait') return verdict.transient ? 'wait_transient' : 'wait_held';
  return verdict.kind;
}

/**
 * Asks the chain about the refusal (afterRefusedPermit), decides (decideAfterRefusedPermit) and
 * acts: undefined to sign again (the lease has the nonce to use), or how this run ends.
 */
async function settleRefusal(
  turn: OwnerTurn,
  refusal: Refusal,
  attempt: number,
): Promise<StepOutcome | undefined> {
  const { ctx, chain, lease } = turn;
  const verdict = await afterRefusedPermit(turn, refusal);
  const decision = decideAfterRefusedPermit(
    { verdict: chainVerdict(verdict), refusals: attempt, pastDeadline: pastDeadline(ctx) },
    ctx.policy,
  );
  // Whatever the verdict, the refused permit is dead: the next permit is a new one.
  const dead: StepsPatch = { permit: null, uncertain: false, ...NO_REFUSAL };
  if (decision !== 'fail_refused') await saveStep(ctx, dead);
  const note = verdict.kind === 'final' ? verdict.note : '';
  const { reason, delayMs } = verdict.kind === 'wait' ? verdict : { reason: '', delayMs: 0 };
  switch (decision) {
    case 'sign_again':
      return undefined;
    case 'fail_kept_moving':
      await lease.release();
      return await finish(ctx, 'failed', {
        error: {
          code: 'refused',
          message: `the service refused the transfer: ${refusal.reason} (the permit nonce kept moving under the worker)`,
        },
      });
    case 'step_back':
      // The owner's nonce keeps moving under us: let the others go first, and come again.
      await lease.release();
      await moveBackToQueued(ctx, `${chain} permit nonce kept moving under the worker; trying again`);
      throw new Later(
        backoffMs(ctx.policy, attempt, ctx.deps.random),
        `the ${chain} permit nonce kept moving under the worker; trying again`,
        'nonce_chain',
      );
    case 'fail_refused':
      return await finish(ctx, 'failed', {
        ...NO_REFUSAL,
        error: { code: 'refused', message: `the service refused the transfer: ${refusal.reason}${note}` },
      });
    case 'wait_transient':
      await moveBackToQueued(ctx, reason);
      throw new Later(delayMs, reason, 'nonce_chain');
    case 'wait_held':
      return await waitQueued(ctx, reason, delayMs, 'nonce_pool');
  }
}

/**
 * The permit may have executed (its answer was lost): its nonce is presumed used, recorded in the
 * pool until the chain settles it after the permit's deadline.
 */
async function presumedUsed(turn: OwnerTurn, permit: PermitPayload, f: ServiceFailure): Promise<StepOutcome> {
  const { ctx } = turn;
  await presumeNonceUsed(turn, permit);
  return await needsReview(ctx, f, Number(permit.deadline) * 1000 + ctx.policy.settleMarginMs);
}

/** The permit's nonce is presumed used, in the pool, until the chain settles it after the deadline. */
async function presumeNonceUsed(turn: OwnerTurn, permit: PermitPayload): Promise<void> {
  const { ctx, evm, chain, lease } = turn;
  const deadline = BigInt(permit.deadline);
  if (BigInt(permit.nonce) === lease.nonce) {
    await lease.presumeUsed(deadline);
  } else {
    // A kept (uncertain) permit whose first lease lapsed: the lease's nonce was not used by it.
    await lease.release();
    await evm.nonces.presumeUsed(chain, permit.owner, {
      nonce: BigInt(permit.nonce),
      deadline,
      holder: holderOf(ctx),
    });
  }
}
