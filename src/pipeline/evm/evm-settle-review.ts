import { isEvmChain } from '../../domain/chains.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { PermitPayload } from '../../service/types.ts';
import type { NonceDoubt, NonceReading } from '../../signing/types.ts';
import type { RunRecord } from '../../store/saved-steps.ts';
import { addEvidence, jittered, Later, saveStep, type Ctx } from '../context.ts';
import { settleReview } from '../outcomes.ts';
import type { StepOutcome } from '../pipeline-deps.ts';
import type { EvmRun } from './owner-turn.ts';

/*
 * EVM `needs_review` settled from the chain. A permit executes only in a block whose timestamp is
 * at or before its deadline, and only while nonces(owner) equals its nonce. So "it never executed
 * and never can" is proven only by a read at a block whose timestamp is past the deadline showing
 * nonces(owner) at or below the permit's nonce. A block from before the deadline (an RPC that
 * lags) proves nothing: the permit may have executed in a block that node has not seen yet.
 */

/** The pool's record of a transfer's presumed-used permit. */
export function doubtOf(batchId: string, transferId: string, permit: PermitPayload): NonceDoubt {
  return {
    nonce: BigInt(permit.nonce),
    deadline: BigInt(permit.deadline),
    holder: `${batchId}/${transferId}`,
  };
}

function describeBlock(reading: NonceReading): string {
  const at = new Date(Number(reading.block.timestamp) * 1000).toISOString();
  return `block ${reading.block.number} (${at})`;
}

/**
 * nonces(owner) at the RPC's finalized block, once that block is past the permit's deadline; until
 * then the run ends (Later) and comes back. Finalized, not latest: "never executed" lets `retry`
 * sign a new permit, and a head block a reorganisation replaces may lack a permit that executed.
 * Undefined without RPC.
 */
async function readPastDeadline(run: EvmRun, permit: PermitPayload): Promise<NonceReading | undefined> {
  const { ctx, evm, chain } = run;
  let reading: NonceReading | undefined;
  try {
    reading = await evm.chain.permitNonceAtHead(chain, permit.owner, 'finalized');
  } catch (err) {
    ctx.log.warn({ chain, err: { message: errorMessage(err) } }, 'cannot read the chain to settle a permit');
    throw new Later(jittered(ctx, 15_000), 'cannot read the chain to settle the permit', 'settle');
  }
  const deadline = BigInt(permit.deadline);
  if (reading !== undefined && reading.block.timestamp <= deadline) {
    ctx.log.info(
      { chain, block: reading.block.number.toString(), deadline: permit.deadline },
      "the RPC's finalized block is not past the permit deadline; settling later",
    );
    const behindMs = Number(deadline - reading.block.timestamp + 1n) * 1000;
    throw new Later(
      Math.min(60_000, Math.max(1_000, behindMs)),
      "the RPC's finalized block is before the permit deadline",
      'settle',
    );
  }
  return reading;
}

export async function settleEvmReview(run: EvmRun, permit: PermitPayload): Promise<StepOutcome> {
  const { ctx, evm, chain } = run;
  const reading = await readPastDeadline(run, permit);
  if (reading === undefined) {
    await addEvidence(ctx, 'cannot settle automatically: no RPC for this chain');
    await saveStep(ctx, { settled: true });
    return { kind: 'done', state: 'needs_review' };
  }
  const doubt = doubtOf(ctx.batchId, ctx.transferId, permit);
  if (reading.nonce <= doubt.nonce)
    return await settleUnusedPermit({ ...run, owner: permit.owner }, doubt, reading);
  await addEvidence(
    ctx,
    `at ${describeBlock(reading)}, past the permit deadline, the chain's nonce is ${reading.nonce} > ${permit.nonce}: the nonce was used`,
  );
  await evm.nonces.settleDoubt(chain, permit.owner, doubt, { used: true });
  await saveStep(ctx, { settled: true });
  return { kind: 'done', state: 'needs_review' };
}

/**
 * The transfer left `needs_review` another way (an operator's `resolve`) before its settle job ran:
 * its permit leaves the pool's review set once a block past its deadline says whether it was used.
 */
export async function forgetResolvedPermit(ctx: Ctx, rec: RunRecord): Promise<void> {
  const { permit } = rec.steps;
  const { evm } = ctx.deps;
  if (!permit || !isEvmChain(rec.from) || !evm) return;
  const doubt = doubtOf(ctx.batchId, ctx.transferId, permit);
  const listed = await evm.nonces.doubts(rec.from, permit.owner, doubt.nonce);
  if (!listed.some((d) => d.holder === doubt.holder && d.deadline === doubt.deadline)) return;
  const reading = await readPastDeadline({ ctx, evm, chain: rec.from }, permit);
  if (reading === undefined) return;
  await evm.nonces.settleDoubt(
    rec.from,
    permit.owner,
    doubt,
    reading.nonce <= doubt.nonce ? { used: false, chainNonce: reading.nonce } : { used: true },
  );
}

/**
 * At `reading` (a block past the permit's deadline) the chain's nonce is at or below the permit's:
 * it never executed and never can. The transfer becomes `failed` (safe to retry) first; only then
 * may the pool give that nonce to another permit, so that the chain's "this nonce was used" can
 * never be read later as "the transfer in review was paid".
 */
export async function settleUnusedPermit(
  run: EvmRun & { readonly owner: string },
  doubt: NonceDoubt,
  reading: NonceReading,
): Promise<StepOutcome> {
  const { ctx, evm, chain, owner } = run;
  await addEvidence(
    ctx,
    `at ${describeBlock(reading)}, past the permit deadline, the chain's nonce is ${reading.nonce} (permit nonce ${doubt.nonce}): the permit never executed`,
  );
  const out = await settleReview(ctx, 'failed', {
    error: {
      code: 'expired_unused',
      message: `the permit expired unused (chain nonce ${reading.nonce} ≤ ${doubt.nonce} at block ${reading.block.number}); safe to retry`,
    },
  });
  await evm.nonces.settleDoubt(chain, owner, doubt, { used: false, chainNonce: reading.nonce });
  return out;
}
