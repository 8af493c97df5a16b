import { addressToBytes32, CCTP_DOMAIN, ZERO_BYTES32 } from '../../domain/cctp.ts';
import { isEvmChain, type EvmChain } from '../../domain/chains.ts';
import { cctpAddressesOf } from '../../config/cctp-settings.ts';
import { formatUsdc } from '../../domain/money.ts';
import { SigningError } from '../../signing/errors.ts';
import { approveData, depositForBurnData } from '../../signing/evm/cctp-calls.ts';
import type { OwnerCall } from '../../signing/evm/owner-tx/owner-tx-sender.ts';
import type { StepsPatch } from '../../store/saved-steps.ts';
import { addEvidence, current, jittered, Later, lockLost, saveStep, wait, type Ctx } from '../context.ts';
import { reserveDailySpend } from '../daily-cap.ts';
import { holderOf } from '../evm/owner-turn.ts';
import { saveHeld } from '../held-save.ts';
import { finish, submitted } from '../outcomes.ts';
import type { StepOutcome, WaitKind } from '../pipeline-deps.ts';
import type { CctpDeps } from './cctp-deps.ts';
import { approvalAmount, decideAfterBurnStep, earlyAllowanceHolds } from './cctp-decision.ts';
import { notEvm, thresholdOf } from './cctp-estimate.ts';
import {
  stepOwnerCall,
  unminedOwnerCalls,
  waitKindOf,
  watchDelayMs,
  WATCH_EVERY_MS,
  WATCH_MS,
} from './owner-call.ts';

/*
 * The CCTP road in the transfer's job (docs/cctp.md "The flow"): after the same pre-sign checks as
 * the service road (run-transfer.ts), an owner's (chain, owner) lease → a bounded approve where the
 * allowance does not cover the amount → the burn, signed once per transfer (its call named by the
 * transfer and its generation) and driven until mined → `submitted`. The attestation and the mint
 * follow it (cctp-follow.ts). A new burn only when the chain shows the earlier can never execute.
 */

const BURN_GAS = 300_000n;
const APPROVE_GAS = 100_000n;

type Burner = {
  readonly ctx: Ctx;
  readonly cctp: CctpDeps;
  readonly chain: EvmChain;
  readonly owner: string;
  /** The calls whose owner and naming facts this run has had held by the replicas (holdCallFacts). */
  readonly held: Set<string>;
};

export async function cctpFlow(ctx: Ctx, cctp: CctpDeps | undefined): Promise<StepOutcome> {
  const rec = current(ctx);
  if (!isEvmChain(rec.from) || !isEvmChain(rec.to)) return await notEvm(ctx);
  if (!cctp) throw new Later(5_000, 'this worker has no EVM key', 'no_key');
  await ownerKeyHeld(ctx, cctp);
  const owner = await leasedOwner(ctx, cctp, rec.from);
  const b: Burner = { ctx, cctp, chain: rec.from, owner, held: new Set() };
  await reserveDailyOrStepBack(b);
  await reopenUnsignedBurn(b);
  for (;;) {
    if (current(ctx).cctp.burnGen === null) {
      const out = await beginBurn(b);
      if (out) return out;
    }
    const out = await driveBurn(b);
    if (out !== 'new_burn') return out;
  }
}

/**
 * A transfer whose record names its owner (chosen by an earlier run, perhaps on another worker) is
 * that owner's for good: its approve and burn are that owner's calls. A worker holding no key of it
 * (workers of one deployment may hold different keys) hands the job back, the reason shown, for a
 * worker that does — before taking the owner's lease, which it could not use. Its fate is known to
 * the chain and to the worker with the key: not `needs_review`.
 */
async function ownerKeyHeld(ctx: Ctx, cctp: CctpDeps): Promise<void> {
  const saved = current(ctx).steps.owner;
  if (!saved || cctp.owners.some((o) => o.toLowerCase() === saved.toLowerCase())) return;
  await waitShown(ctx, noKeyReason(saved), 'no_key');
}

const noKeyReason = (owner: string) =>
  `the owner ${owner} approves and burns this transfer, and this worker holds no key of it: waiting for a worker that does`;

/** The daily cap, taken once per transfer; over it, the owner's lease goes back before the wait. */
async function reserveDailyOrStepBack(b: Burner): Promise<void> {
  try {
    await reserveDailySpend(b.ctx);
  } catch (err) {
    if (current(b.ctx).cctp.burnGen === null) await releaseLease(b);
    throw err;
  }
}

/**
 * The transfer's owner (saved once chosen), with its (chain, owner) lease taken or renewed. While
 * another transfer holds it, this one waits inside its job (woken by the release, looking again at
 * least every LEASE_LOOK_MS in case a crashed holder's lease lapsed), as long as the policy allows
 * (`leaseWaitMs`, jittered): then the job comes back. So only the worker's running jobs wait; the
 * rest stay untouched in the queue. A transfer whose own call of its saved owner has a nonce already
 * does not wait: that call is driven to its fate whoever holds the lease (keepLease).
 */
async function leasedOwner(ctx: Ctx, cctp: CctpDeps, chain: EvmChain): Promise<string> {
  const saved = current(ctx).steps.owner;
  const owners = saved ? [saved] : cctp.owners;
  const giveUpAt = Date.now() + jittered(ctx, ctx.policy.leaseWaitMs);
  for (;;) {
    const owner = await takeAny(ctx, cctp, chain, owners);
    if (owner !== undefined) {
      if (!saved) await saveStep(ctx, { owner });
      return owner;
    }
    if (saved && (await callInFlight(ctx, cctp, chain, saved))) return saved;
    const left = giveUpAt - Date.now();
    if (left <= 0 || ctx.signal.aborted) break;
    const at = { chain, owners, holder: holderOf(ctx) };
    await cctp.lease.waitReleased(at, Math.min(left, LEASE_LOOK_MS), ctx.signal);
  }
  const who = saved ? `the owner ${saved}` : 'every owner';
  throw new Later(1_000, `${who} is approving or burning on ${chain} for another transfer`, 'nonce_lease');
}

/**
 * Whether this transfer's current call of `owner` (its burn, or the approve decided before it) has a
 * nonce already: it is then driven to its fate whoever holds the lease now (keepLease).
 */
async function callInFlight(ctx: Ctx, cctp: CctpDeps, chain: EvmChain, owner: string): Promise<boolean> {
  const rec = current(ctx);
  const { burnGen, approval } = rec.cctp;
  const id =
    burnGen !== null
      ? burnCallId(ctx, burnGen)
      : approval !== null
        ? approveCallId(ctx, (rec.steps.payloadGen ?? 0) + 1)
        : undefined;
  return id !== undefined && (await cctp.sender.saved(chain, owner, id)) !== undefined;
}

const burnCallId = (ctx: Ctx, gen: number) => `${holderOf(ctx)}:burn:${gen}`;
const approveCallId = (ctx: Ctx, gen: number) => `${holderOf(ctx)}:approve:${gen}`;
/** Whether `id` names one of this transfer's approves or burns (of any generation). */
function isOwnCall(ctx: Ctx, id: string): boolean {
  const prefix = `${holderOf(ctx)}:`;
  return id.startsWith(prefix) && /^(burn|approve):\d+$/.test(id.slice(prefix.length));
}

/**
 * Before each step of an owner's call: the (chain, owner) lease renewed. Found held by another
 * transfer (this run's lapsed during a long stall, or a failover lost it), the call is stepped only
 * where it has a nonce already: that nonce comes before any the other transfer is given, so the
 * chain runs it first whatever the other does, and left unsigned it would hold the other's
 * transactions behind a gap — it is driven to its fate (a call signed is only ever sent). A call
 * without a nonce is nothing yet: the run signs nothing new with an owner another transfer is
 * approving or burning with (its approve could set the allowance this burn counts on, or this one
 * the allowance its burn counts on), and hands the job back, the reason shown; a later run takes the
 * lease and steps the same call (reopenUnsignedBurn looks at the allowance again first).
 */
async function keepLease(b: Burner, call: OwnerCall, what: 'approve' | 'burn'): Promise<void> {
  const { ctx, cctp, chain, owner } = b;
  if (await cctp.lease.take(chain, owner, holderOf(ctx))) return;
  if ((await cctp.sender.saved(chain, owner, call.id)) !== undefined) return;
  await waitShown(
    ctx,
    `another transfer took the lease of the owner ${owner} on ${chain} before this transfer's ${what} was signed: it goes on once the lease is free`,
    'nonce_lease',
  );
}

/** How often a transfer waiting for the lease looks again without a wake-up (a lapsed lease). */
const LEASE_LOOK_MS = 5_000;

/** The first of `owners` whose lease this transfer takes (or has), if any. */
async function takeAny(
  ctx: Ctx,
  cctp: CctpDeps,
  chain: EvmChain,
  owners: readonly string[],
): Promise<string | undefined> {
  for (const owner of owners) if (await cctp.lease.take(chain, owner, holderOf(ctx))) return owner;
  return undefined;
}

async function releaseLease(b: Burner): Promise<void> {
  await b.cctp.lease.release(b.chain, b.owner, holderOf(b.ctx));
}

/** The approve where needed, then the new burn's generation saved: from here it is the transfer's burn. */
async function beginBurn(b: Burner): Promise<StepOutcome | undefined> {
  const { ctx } = b;
  const rec = current(ctx);
  const gen = (rec.steps.payloadGen ?? 0) + 1;
  const approved = await ensureAllowance(b, gen);
  if (approved) return approved;
  await saveStep(ctx, {
    payloadGen: gen,
    cctp: {
      burnGen: gen,
      burnTx: null,
      attestation: null,
      ...(rec.cctp.approval !== null ? { approval: null } : {}),
    },
  });
  return undefined;
}

/**
 * Where the owner's allowance to TokenMessengerV2 does not cover the amount, approves what the owner's
 * queued transfers from this chain need (approvalAmount: the batch's rows not burned yet, capped by
 * the owner's USDC, never unlimited): one approval for a batch's rows, not one per row.
 */
async function ensureAllowance(b: Burner, gen: number): Promise<StepOutcome | undefined> {
  const { ctx, cctp, chain } = b;
  const rec = current(ctx);
  const allowance = await allowanceAfterEarlierCalls(b, approveCallId(ctx, gen));
  if (allowance >= rec.amount) return undefined;
  const approving = await approvalFor(b);
  const a = cctpAddressesOf(ctx.deps.config, chain);
  const call: OwnerCall = {
    id: approveCallId(ctx, gen),
    to: a.usdc,
    data: approveData(a.tokenMessenger, approving.amount),
    gas: APPROVE_GAS,
  };
  ctx.report(
    'approve',
    `allowance ${formatUsdc(allowance)} USDC; approving ${formatUsdc(approving.amount)} USDC to TokenMessengerV2 (${approving.why})`,
  );
  await holdCallFacts(b, call.id, 'approve', { cctp: { approval: approving.amount } });
  const started = Date.now();
  let looks = 0;
  for (;;) {
    await keepLease(b, call, 'approve');
    const step = await stepOwnerCall(ctx, cctp, b, call);
    if (step.kind === 'mined' && step.success && !step.filler) {
      ctx.report('approve', `approve ${step.hash} mined`);
      return undefined;
    }
    if (step.kind === 'mined' || step.kind === 'replaced-by-other') {
      await releaseLease(b);
      const what =
        step.kind === 'mined'
          ? `mined with status 0 (${step.hash})`
          : `its nonce ${step.nonce} was used by another transaction`;
      return await finish(ctx, 'failed', {
        payloadGen: gen,
        error: {
          code: 'cctp_approve_failed',
          message: `the approve of ${formatUsdc(rec.amount)} USDC ${what}: nothing was burned`,
        },
      });
    }
    if (step.kind === 'waiting' && step.reason !== 'pending')
      return await waitShown(ctx, step.detail, waitKindOf(step));
    if (Date.now() - started > WATCH_MS)
      throw new Later(WATCH_EVERY_MS, 'the approve is not mined yet', 'retry');
    await wait(ctx, watchDelayMs(looks++));
  }
}

/**
 * The owner's allowance once every earlier call it rests on is mined (earlierCallsMined). Read beside
 * that look, not after it — one RPC round less between a burn's receipt and the next burn — and
 * taken only where the calls the look found mined were mined before the read was sent
 * (cctp-decision.ts earlyAllowanceHolds; the serial case: the lease's last holder saw its burn mined
 * before it let the lease go); otherwise read again after the look, as the order the decision rests
 * on asks.
 */
async function allowanceAfterEarlierCalls(b: Burner, callId: string): Promise<bigint> {
  const readSentAt = performance.now();
  const early = allowanceOf(b).then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const chainNonce = await earlierCallsMined(b, callId);
  const seenMined = b.cctp.sender.seenMined(b.chain, b.owner);
  if (!earlyAllowanceHolds({ chainNonce, seenMined, readSentAt })) return await allowanceOf(b);
  const read = await early;
  if (!read.ok) throw read.error;
  return read.value;
}

/** The owner's allowance to TokenMessengerV2 on the chain; unreadable, the job comes back. */
async function allowanceOf(b: Burner): Promise<bigint> {
  return await b.cctp.reads.allowance(b.chain, b.owner).catch((err: unknown) => {
    throw new Later(2_000, (err as Error).message, 'retry');
  });
}

/**
 * Before the allowance decides this transfer's next call (`callId`: whether to approve, or whether
 * a burn begun earlier is still covered), every approve and burn of the owner's other transfers on
 * the chain at a nonce below that call's is mined. One may be signed and sent, not mined: its run's
 * lease lapsed in a long stall (or a failover lost it) and this transfer took it, while that call is
 * driven to its fate without the lease (keepLease). The allowance read now would not show what it
 * spends, and a burn counting on it would revert once it is mined (`failed`, for nothing of this
 * transfer's). Until then nothing is signed: the job comes back, the reason shown. This transfer's
 * own calls are its run's to drive, and the owner's mints spend no allowance: neither is waited for.
 * Returns the owner's nonce on chain the look read (undefined: no call of it was ever given a nonce).
 */
async function earlierCallsMined(b: Burner, callId: string): Promise<bigint | undefined> {
  const { ctx, cctp, chain, owner } = b;
  const own = (await cctp.sender.saved(chain, owner, callId))?.nonce;
  const a = cctpAddressesOf(ctx.deps.config, chain);
  const spending = new Set([a.usdc.toLowerCase(), a.tokenMessenger.toLowerCase()]);
  const look = await unminedOwnerCalls(cctp, b);
  const earlier = look.calls.find(
    (t) =>
      !isOwnCall(ctx, t.callId) && spending.has(t.to.toLowerCase()) && (own === undefined || t.nonce < own),
  );
  if (!earlier) return look.chainNonce;
  return await waitShown(
    ctx,
    `the owner ${owner}'s call ${earlier.callId} at nonce ${earlier.nonce} on ${chain} is not mined yet: this transfer reads the allowance it leaves once it is, and signs nothing before`,
    'nonce_chain',
  );
}

/**
 * A burn begun by an earlier run but given no nonce yet (that run crashed before its first step, or
 * handed its job back when another transfer took the owner's lease: keepLease) counts on an
 * allowance that another transfer's approve or burn may have changed since. Where the allowance no
 * longer covers it, the burn is begun anew (a new generation: the approve where needed, then a new
 * call) rather than stepped into a revert. Nothing of the old call exists (no nonce, nothing
 * signed), and this run, holding the transfer's lock, is the only one that could step it: it can
 * never execute. Its successor is held by the replicas before it is stepped (holdBurnFacts), so a
 * failover that loses this write never leaves two burns signed.
 */
async function reopenUnsignedBurn(b: Burner): Promise<void> {
  const { ctx, cctp, chain, owner } = b;
  const rec = current(ctx);
  const gen = rec.cctp.burnGen;
  if (gen === null) return;
  const id = burnCallId(ctx, gen);
  if ((await cctp.sender.saved(chain, owner, id)) !== undefined) return;
  await earlierCallsMined(b, id);
  const allowance = await allowanceOf(b);
  if (allowance >= rec.amount) return;
  await addEvidence(
    ctx,
    `burn call ${id} was never signed and the allowance of ${owner} on ${chain} (${formatUsdc(allowance)} USDC) no longer covers it: beginning the burn anew`,
  );
  await saveStep(ctx, { cctp: { burnGen: null, burnTx: null } });
}

/**
 * What the approval covers, and why (for the step log): decided once and saved before the approve is
 * signed, so a resumed run steps the same call (the owner-tx sender refuses another call under its id).
 */
async function approvalFor(b: Burner): Promise<{ readonly amount: bigint; readonly why: string }> {
  const { ctx, cctp, chain, owner } = b;
  const rec = current(ctx);
  if (rec.cctp.approval !== null) return { amount: rec.cctp.approval, why: 'as decided before a restart' };
  const [pending, balance] = await Promise.all([
    cctp.pendingBurns(ctx.batchId, chain, owner),
    cctp.reads.usdcBalance(chain, owner),
  ]).catch((err: unknown) => {
    throw new Later(2_000, (err as Error).message, 'retry');
  });
  const amount = approvalAmount({ current: { id: ctx.transferId, amount: rec.amount }, pending, balance });
  await saveStep(ctx, { cctp: { approval: amount } });
  const rows = Math.max(1, pending.length);
  return {
    amount,
    why: `what ${rows} queued transfer${rows === 1 ? '' : 's'} of this owner on ${chain} need`,
  };
}

/** The transfer's burn call, the same for every step of its generation. */
function burnCall(b: Burner): OwnerCall {
  const { ctx, chain } = b;
  const rec = current(ctx);
  const gen = rec.cctp.burnGen;
  const maxFee = rec.cctp.maxFee;
  if (gen === null || maxFee === null || rec.via === 'service' || !isEvmChain(rec.to)) {
    throw new Error(`no burn begun for ${holderOf(ctx)}`);
  }
  const a = cctpAddressesOf(ctx.deps.config, chain);
  return {
    id: burnCallId(ctx, gen),
    to: a.tokenMessenger,
    data: depositForBurnData({
      amount: rec.amount,
      destinationDomain: CCTP_DOMAIN[rec.to],
      mintRecipient: addressToBytes32(rec.recipient),
      burnToken: a.usdc,
      destinationCaller: ZERO_BYTES32,
      maxFee,
      minFinalityThreshold: thresholdOf(rec.via),
    }),
    gas: BURN_GAS,
  };
}

/**
 * Before this run first steps an owner's call (the sender may sign and broadcast it in that step),
 * the transfer's owner and what names the call are written again and held by the replicas
 * (held-save.ts). The writes that chose them (leasedOwner, approvalFor, beginBurn) went on the
 * usual connection and may have reached only a primary that a failover replaced since, while this
 * run, holding them in memory, signs on the promoted one: a re-run reading a record without the
 * owner would take another owner's lease and sign the transfer's burn again — two burns, paid
 * twice. Held here, before anything of the call is signed, they survive any failover the signed
 * transaction survives (the owner-tx sender holds it on the replicas before broadcasting it). On
 * Redis Cluster the same holds: QUEUE_PREFIX is one hash tag, so the record and the owner's
 * transactions live on one master (docs/scaling.md "Redis Cluster"). Short of the replicas, nothing
 * is stepped: the transfer waits, its reason shown.
 */
async function holdCallFacts(
  b: Burner,
  id: string,
  what: 'approve' | 'burn',
  patch: StepsPatch,
): Promise<void> {
  const { ctx } = b;
  if (b.held.has(id)) return;
  if (!ctx.lock || ctx.lock.released)
    throw new Error(`the ${what} of ${holderOf(ctx)} is stepped without its lock`);
  const fence = { token: ctx.lock.token, carried: current(ctx) };
  const { verdict } = await saveHeld(ctx, { ...patch, owner: b.owner }, fence, lockLost);
  if (!verdict.ok) {
    const reason = `waiting for Redis replicas before the ${what} is signed: ${verdict.reason}`;
    return await waitShown(ctx, reason, 'replicas');
  }
  b.held.add(id);
}

/** The burn's owner, generation and maxFee (its calldata), held before it is stepped in this run. */
async function holdBurnFacts(b: Burner, id: string): Promise<void> {
  const rec = current(b.ctx);
  const { burnGen, maxFee } = rec.cctp;
  const payloadGen = rec.steps.payloadGen;
  await holdCallFacts(b, id, 'burn', {
    ...(payloadGen !== null ? { payloadGen } : {}),
    cctp: { burnGen, maxFee },
  });
}

/**
 * Steps the burn until it is mined (`submitted`, or `failed` when it reverted), hands the job back
 * while it cannot be sent, or says `new_burn` when the chain shows it can never execute.
 */
async function driveBurn(b: Burner): Promise<StepOutcome | 'new_burn'> {
  const { ctx, cctp, chain } = b;
  const call = burnCall(b);
  const started = Date.now();
  let looks = 0;
  let replacedBefore = false;
  ctx.report('burn', `depositForBurn of ${formatUsdc(current(ctx).amount)} USDC from ${b.owner} on ${chain}`);
  await holdBurnFacts(b, call.id);
  for (;;) {
    await keepLease(b, call, 'burn');
    let step;
    try {
      step = await stepOwnerCall(ctx, cctp, b, call);
    } catch (err) {
      if (err instanceof SigningError) return await burnUnknown(b, err.message);
      throw err;
    }
    if (step.kind === 'sent' && current(ctx).cctp.burnTx !== step.hash) {
      ctx.report('burn', `burn ${step.hash} sent (${step.how}, nonce ${step.nonce})`);
      // With its owner and generation again: a failover may have lost the writes that chose them.
      const gen = current(ctx).cctp.burnGen;
      await saveStep(ctx, { owner: b.owner, cctp: { burnTx: step.hash, burnGen: gen } });
    }
    switch (decideAfterBurnStep(step, { replacedBefore })) {
      case 'watch':
        if (Date.now() - started > WATCH_MS)
          throw new Later(WATCH_EVERY_MS, 'the burn is not mined yet', 'retry');
        await wait(ctx, watchDelayMs(looks++));
        continue;
      case 'wait':
        return await waitShown(ctx, step.kind === 'waiting' ? step.detail : 'waiting', waitKindOf(step));
      case 'submitted':
        return await burned(b, step.kind === 'mined' ? step.hash : '');
      case 'reverted':
        return await burnReverted(b, step.kind === 'mined' ? step : undefined);
      case 'confirm':
        replacedBefore = true;
        continue;
      case 'new_burn':
        await burnNeverExecutes(b, step);
        return 'new_burn';
    }
  }
}

/**
 * The burn mined: `submitted`, in one write that names all the follower needs to attest and mint it
 * (the owner, the burn's generation and maxFee), as this run knows them. Written earlier too, but a
 * Redis failover may have lost those writes while this one lands on the promoted replica
 * (docs/replicated-redis.md): a record saying `submitted` without its owner would never be minted.
 */
async function burned(b: Burner, hash: string): Promise<StepOutcome> {
  const { ctx, chain, owner } = b;
  const { burnGen, maxFee } = current(ctx).cctp;
  ctx.report('burn', `burn ${hash} mined: submitted; the attestation and the mint follow`);
  await releaseLease(b);
  return await submitted(ctx, {
    intentId: `cctp:${CCTP_DOMAIN[chain]}:${hash}`,
    intentStatus: 'pending',
    txHash: hash,
    owner,
    cctp: { burnTx: hash, attestation: 'pending', burnGen, maxFee },
  });
}

async function burnReverted(
  b: Burner,
  step: { nonce: bigint; hash: string } | undefined,
): Promise<StepOutcome> {
  const { ctx, chain } = b;
  await releaseLease(b);
  await addEvidence(
    ctx,
    `burn ${step?.hash ?? '?'} on ${chain} mined with status 0 at nonce ${step?.nonce ?? '?'}: nothing was burned`,
  );
  return await finish(ctx, 'failed', {
    cctp: { burnGen: null },
    error: {
      code: 'cctp_burn_reverted',
      message: `the burn ${step?.hash ?? ''} reverted on ${chain}: nothing moved; retry may send it again`,
    },
  });
}

/** The chain shows the burn can never execute (its nonce used by another transaction, seen twice). */
async function burnNeverExecutes(b: Burner, step: Parameters<typeof decideAfterBurnStep>[0]): Promise<void> {
  const { ctx, chain } = b;
  const what =
    step.kind === 'replaced-by-other'
      ? `its nonce ${step.nonce} is used on ${chain} (chain nonce ${step.chainNonce}) by ${step.holder.hash}, mined in block ${step.holder.block}, which is none of its versions (${step.hashes.join(', ')})`
      : 'its nonce was filled by a zero-value transaction';
  await addEvidence(ctx, `burn call ${burnCall(b).id} can never execute: ${what}; making a new burn`);
  await saveStep(ctx, { cctp: { burnGen: null, burnTx: null } });
}

/** A burn whose fate cannot be known: never signed again, an operator looks. */
async function burnUnknown(b: Burner, why: string): Promise<StepOutcome> {
  const { ctx } = b;
  await releaseLease(b);
  await addEvidence(ctx, `burn call ${burnCall(b).id}: ${why}`);
  return await finish(ctx, 'needs_review', {
    error: {
      code: 'outcome_unknown',
      message: `the fate of the CCTP burn cannot be known: ${why}; check the chain, then use resolve`,
    },
  });
}

/**
 * An owner's call that cannot be sent now (the gas cap, the owner's gas, the replicas): the transfer
 * stays `in_progress` (its call holds a nonce of the owner: it is not for `cancel` to drop), with
 * the reason shown, and the job comes back.
 */
async function waitShown(ctx: Ctx, reason: string, kind: WaitKind): Promise<never> {
  if (current(ctx).waitReason !== reason) await saveStep(ctx, { waitReason: reason });
  throw new Later(5_000, reason, kind);
}
