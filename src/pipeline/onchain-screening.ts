import { isEvmChain, type Chain, type EvmChain } from '../domain/chains.ts';
import { fixedOwner } from './evm/evm-owner.ts';
import type { UsdcControls } from '../signing/usdc-controls.ts';
import type { RunRecord } from '../store/saved-steps.ts';
import { current, jittered, type Ctx } from './context.ts';
import {
  decideOwners,
  decideRecipient,
  type OnchainRefusal,
  type OwnerReading,
  type RecipientFacts,
} from './onchain-controls.ts';
import { finish, waitQueued } from './outcomes.ts';
import type { EvmDeps, OnchainScreening, StepOutcome } from './pipeline-deps.ts';

/*
 * The run's side of USDC's on-chain controls (SCREENING_ONCHAIN=on, docs/promises.md promise 6):
 * the reads, the decision (onchain-controls.ts) and what it leads to. Called only while the
 * transfer has no payload, so before anything is signed for it; a transfer that already has one was
 * screened before it was signed, and what was signed is never cut off here.
 */

/** A read that failed is read again after this long (±25 %): the transfer waits, it is never skipped. */
const READ_AGAIN_MS = 3_000;

/**
 * The recipient's controls on its destination chain: undefined when it may be paid (or that chain
 * has no RPC: named at the worker's start), else how the run ended (`rejected`).
 */
export async function screenRecipient(ctx: Ctx, ahead?: OnchainReadsAhead): Promise<StepOutcome | undefined> {
  const screening = ctx.deps.onchain;
  if (!screening) return undefined;
  const rec = current(ctx);
  const facts = await readOrWait(
    ctx,
    rec.to,
    () => ahead?.recipient ?? recipientFacts(screening.controls, rec),
  );
  const refusal = decideRecipient(facts);
  return refusal ? await refuse(ctx, screening, refusal) : undefined;
}

async function recipientFacts(controls: UsdcControls, rec: RunRecord): Promise<RecipientFacts> {
  if (!controls.screens(rec.to)) return { kind: 'unscreened' };
  if (isEvmChain(rec.to)) {
    const blacklisted = await controls.blacklisted(rec.to, rec.recipient);
    return { kind: 'evm', chain: rec.to, recipient: rec.recipient, blacklisted };
  }
  const { account, state } = await controls.solanaAccount(rec.recipient);
  return { kind: 'solana', recipient: rec.recipient, account, state };
}

/**
 * The owners that may pay on the source chain: `evm` with the blacklisted ones left out, or how the
 * run ended (`failed`, `owner_blacklisted`) when none may.
 */
export async function screenOwners(
  ctx: Ctx,
  evm: EvmDeps,
  chain: EvmChain,
  ahead?: OnchainReadsAhead,
): Promise<{ readonly evm: EvmDeps } | { readonly outcome: StepOutcome }> {
  const screening = ctx.deps.onchain;
  if (!screening || !screening.controls.screens(chain)) return { evm };
  const owners = await readOrWait(
    ctx,
    chain,
    () => ahead?.owners ?? ownerFacts(screening.controls, chain, evm.signers),
  );
  const verdict = decideOwners({ chain, owners, fixed: fixedOwner(current(ctx)) });
  if ('refusal' in verdict) return { outcome: await refuse(ctx, screening, verdict.refusal) };
  if (verdict.owners.length === evm.signers.length) return { evm };
  const left = owners.filter((o) => o.blacklisted).map((o) => o.address);
  ctx.report(null, `owners blacklisted by USDC on ${chain} do not pay: ${left.join(', ')}`);
  return { evm: { ...evm, signers: evm.signers.filter((s) => verdict.owners.includes(s.address)) } };
}

/** Each owner's place on USDC's blacklist of `chain`. */
async function ownerFacts(
  controls: UsdcControls,
  chain: EvmChain,
  signers: EvmDeps['signers'],
): Promise<OwnerReading[]> {
  return await Promise.all(
    signers.map(async (s) => ({
      address: s.address,
      blacklisted: await controls.blacklisted(chain, s.address),
    })),
  );
}

/**
 * The on-chain reads of a run's checks, begun together at its start (`readOnchainAhead`) so that they
 * overlap the fee estimate instead of following it; each is still decided at its own place in the
 * order of the checks, and a failed read waits there as before.
 */
export type OnchainReadsAhead = {
  readonly recipient?: Promise<RecipientFacts> | undefined;
  readonly owners?: Promise<OwnerReading[]> | undefined;
};

/**
 * Begins the reads `screenRecipient` and (for an EVM source chain) `screenOwners` will decide on:
 * both wait on the chains' RPC while the estimate waits on the service. Nothing is decided here;
 * a run that stops at an earlier check leaves their answers unread.
 */
export function readOnchainAhead(ctx: Ctx): OnchainReadsAhead | undefined {
  const screening = ctx.deps.onchain;
  if (!screening) return undefined;
  const rec = current(ctx);
  const { evm } = ctx.deps;
  const from = rec.from;
  return {
    recipient: quiet(recipientFacts(screening.controls, rec)),
    owners:
      evm && isEvmChain(from) && screening.controls.screens(from)
        ? quiet(ownerFacts(screening.controls, from, evm.signers))
        : undefined,
  };
}

/** The promise, its rejection left for whoever awaits it (none, when the run stopped before). */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

/** The reads, or the transfer waits `queued` with the reason until they can be made. */
async function readOrWait<T>(ctx: Ctx, chain: Chain, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    const why = err instanceof Error ? err.message.slice(0, 200) : String(err);
    const reason = `reading USDC's own controls on ${chain} failed (${why}); nothing is signed until they can be read (SCREENING_ONCHAIN=on)`;
    ctx.report('wait', reason);
    return await waitQueued(ctx, reason, jittered(ctx, READ_AGAIN_MS), 'retry');
  }
}

/** A refusal: audited (who: the chain), counted, and the transfer made final with its code. */
async function refuse(ctx: Ctx, screening: OnchainScreening, refusal: OnchainRefusal): Promise<StepOutcome> {
  const rec = current(ctx);
  await screening.audit({
    who: `chain:${refusal.chain}`,
    batch: rec.batchId,
    detail: {
      transfer: rec.id,
      line: rec.line,
      check: refusal.check,
      code: refusal.code,
      chain: refusal.chain,
      address: refusal.address,
    },
  });
  ctx.deps.metrics?.screeningRefused?.(refusal.check);
  ctx.report('guard', `${refusal.state}: ${refusal.code}: ${refusal.message}`);
  return await finish(ctx, refusal.state, { error: { code: refusal.code, message: refusal.message } });
}
