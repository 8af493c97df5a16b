import { isEvmChain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { shortAddress } from '../domain/addresses.ts';
import type { SolanaSigner } from '../signing/types.ts';
import { nextPayloadGen, type StepsPatch } from '../store/saved-steps.ts';
import { addEvidence, current, saveStep, type Ctx } from './context.ts';
import { decideAfterRefusedSolanaTx } from './failure-decision.ts';
import { asServiceFailure, describeFailure, type ServiceFailure } from './failure.ts';
import { finish, keyReusedReview, needsReview, submitted, transientOrFinal } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import { afterFailedSend, beginSend } from './send-attempt.ts';

/*
 * SOLANA: build-tx → policy check → sign → submit. A signed transaction is saved in the same write
 * that marks its first send begun, and re-submitted identically until it is proven dead.
 */

/** A signed, unsent transaction this close to its expiry is replaced rather than sent. */
const TX_MIN_LIFE_MS = 5_000;

/**
 * The transaction a send carries: the signed transaction, its intent, its payload number (the
 * Idempotency-Key) and expiry (ms, NaN when unknown); `fresh` its fields when it was just built.
 */
type SignedTx = {
  readonly kind: 'tx';
  readonly signed: string;
  readonly gen: number;
  readonly intentId: string;
  readonly expiresAt: number;
  readonly fresh?: StepsPatch;
};

/**
 * Sends the transfer's transaction (the saved one, or a new one) until an answer ends the run,
 * from the transfer as the run carries it (Ctx.run).
 */
export async function solanaFlow(ctx: Ctx, signer: SolanaSigner): Promise<StepOutcome> {
  let rebuilds = 0;
  for (;;) {
    const tx = await savedOrNewTx(ctx, signer);
    if (tx.kind !== 'tx') return tx;
    const out = await submitTx(ctx, tx, rebuilds);
    if (out === 'resend') continue;
    if (out === 'rebuild') {
      rebuilds++;
      continue;
    }
    return out;
  }
}

/** The saved transaction, unless it was never processed and is about to expire; else a new one. */
async function savedOrNewTx(ctx: Ctx, signer: SolanaSigner): Promise<SignedTx | StepOutcome> {
  const { steps } = current(ctx);
  const expiresAt = steps.solanaExpiresAt ?? NaN;
  const signed = steps.solanaSigned;
  if (signed && !steps.uncertain && Number.isFinite(expiresAt) && expiresAt - ctx.now() < TX_MIN_LIFE_MS) {
    // Never processed and about to expire: it can be replaced.
    await addEvidence(
      ctx,
      `replaced unsent Solana transaction of intent ${steps.solanaIntent ?? undefined} near its expiry`,
    );
  } else if (signed) {
    return { kind: 'tx', signed, gen: steps.payloadGen ?? 1, intentId: steps.solanaIntent ?? '', expiresAt };
  }
  return await buildCheckedTx(ctx, signer);
}

/** build-tx, then the policy check (it does only the requested payment), then our signature. */
async function buildCheckedTx(ctx: Ctx, signer: SolanaSigner): Promise<SignedTx | StepOutcome> {
  const rec = current(ctx);
  const { steps } = rec;
  if (rec.to === 'SOLANA' || !isEvmChain(rec.to)) {
    return await finish(ctx, 'failed', { error: { code: 'unsupported_route', message: 'SOLANA → SOLANA' } });
  }
  let built;
  ctx.report('build', 'asking the service to build the transaction', true);
  try {
    built = await ctx.deps.service.buildSolanaTx({
      to: rec.to,
      amount: rec.amount,
      fromWallet: signer.address,
      recipient: rec.recipient,
    });
  } catch (err) {
    return await buildFailed(ctx, err);
  }
  ctx.report(
    'build',
    `intent ${built.intentId}, ${formatUsdc(rec.amount)} USDC to ${rec.to} ${shortAddress(rec.recipient)}, expires ${built.expiresAt ?? 'not given'}`,
  );
  ctx.report('verify', 'checking that it does only the requested payment', true);
  const verdict = signer.check(
    built.transaction,
    { amount: rec.amount, recipient: rec.recipient, to: rec.to },
    { batchId: ctx.batchId, transferId: ctx.transferId },
  );
  if (!verdict.ok) {
    return await finish(ctx, 'rejected', {
      error: {
        code: 'policy_refused',
        message: `refused to sign the built transaction${
          verdict.instruction === null ? '' : ` (instruction ${verdict.instruction})`
        }: ${verdict.reason}`,
      },
      solanaIntent: built.intentId,
    });
  }
  const signed = await signer.sign(built.transaction);
  ctx.report(
    'sign',
    `checked (it does only the requested payment) and signed by ${shortAddress(signer.address)}, not the fee payer`,
  );
  const gen = nextPayloadGen(steps);
  return {
    kind: 'tx',
    signed,
    gen,
    intentId: built.intentId,
    expiresAt: built.expiresAt ? Date.parse(built.expiresAt) : NaN,
    // Saved in the same write that marks its first send begun (beginSend).
    fresh: {
      solanaIntent: built.intentId,
      solanaExpiresAt: built.expiresAt ?? null,
      solanaSigned: signed,
      payloadGen: gen,
      uncertain: false,
      ambiguous: 0,
      unavailable: 0,
    },
  };
}

/** build-tx failed: a refusal is final; anything else waits, within the transient deadline. */
async function buildFailed(ctx: Ctx, err: unknown): Promise<StepOutcome> {
  const f = asServiceFailure(err);
  if (!f) throw err;
  if (f.kind === 'rejected') {
    return await finish(ctx, 'failed', {
      error: {
        code: 'build_refused',
        message: `the service refused to build the transaction: ${describeFailure(f)}`,
      },
    });
  }
  return await transientOrFinal(ctx, f, 'build-tx');
}

/** One send of `tx`: how the run ends, or that it goes on (`resend` the same, `rebuild` a new one). */
async function submitTx(
  ctx: Ctx,
  tx: SignedTx,
  rebuilds: number,
): Promise<StepOutcome | 'resend' | 'rebuild'> {
  const key = `${ctx.batchId}/${ctx.transferId}/${tx.gen}`;
  await beginSend(ctx, { call: 'POST /sdk/v1/solana/submit', idempotencyKey: key, fresh: tx.fresh });
  try {
    const res = await ctx.deps.service.submitSolanaTx(
      { intentId: tx.intentId, signedTransaction: tx.signed },
      { idempotencyKey: key },
    );
    ctx.report(
      'answer',
      `accepted: intent ${res.intentId || tx.intentId} (${res.status}), signature ${res.txSignature ? shortAddress(res.txSignature) : 'not given'}`,
    );
    return await submitted(ctx, {
      intentId: res.intentId || tx.intentId,
      intentStatus: res.status,
      txSignature: res.txSignature ?? null,
      sendState: 'idle',
    });
  } catch (err) {
    const { after, f } = await afterFailedSend(ctx, err);
    if (after === 'resend') return 'resend';
    if (after === 'refused_first') return await afterRefusedTx(ctx, tx, f, rebuilds);
    if (after === 'key_reused') {
      // The refused transaction is dead; whether the earlier payload paid, only an operator can say.
      const dead = current(ctx).steps.uncertain ? {} : { solanaSigned: null };
      return await keyReusedReview(ctx, f, { key, dead });
    }
    if (after === 'give_up_unprocessed') {
      return await finish(ctx, 'failed', {
        error: {
          code: 'service_unavailable',
          message: `the service did not process the transaction: ${describeFailure(f)}`,
        },
      });
    }
    const settleAt = Number.isFinite(tx.expiresAt) ? tx.expiresAt + ctx.policy.settleMarginMs : null;
    return await needsReview(ctx, f, settleAt);
  }
}

/**
 * Refused on its first send: it never moved money. If it was refused because it expired, a fresh
 * one may be built (bounded); otherwise the refusal is the answer.
 */
async function afterRefusedTx(
  ctx: Ctx,
  tx: SignedTx,
  f: ServiceFailure,
  rebuilds: number,
): Promise<StepOutcome | 'rebuild'> {
  const decision = decideAfterRefusedSolanaTx(
    { expiresAt: tx.expiresAt, now: ctx.now(), rebuilds },
    ctx.policy,
  );
  if (decision === 'rebuild') {
    await saveStep(ctx, { solanaSigned: null, uncertain: false });
    return 'rebuild';
  }
  return await finish(ctx, 'failed', {
    error: { code: 'refused', message: `the service refused the transaction: ${describeFailure(f)}` },
  });
}
