import { isEvmChain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { Later, loadRecord, type Ctx } from './context.ts';
import { addEvidence } from './evidence.ts';
import { asServiceFailure, describeFailure } from './failure.ts';
import { finish, needsReview, submitted, transientOrFinal } from './outcomes.ts';
import type { StepOutcome } from './pipeline-deps.ts';
import { afterFailedSend, beginSend } from './send-attempt.ts';

/** SOLANA: build-tx → policy check → sign → submit. */
export async function solanaFlow(ctx: Ctx): Promise<StepOutcome> {
  const { store, service } = ctx.deps;
  const signer = ctx.deps.solana;
  if (!signer) throw new Later(5_000, 'this worker has no Solana key', 'no_key');
  let rebuilds = 0;
  for (;;) {
    const rec = await loadRecord(ctx);
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
      ctx.report(
        'build',
        `POST /sdk/v1/solana/build-tx: intent ${built.intentId}, ${formatUsdc(rec.amount)} USDC to ${rec.to} ${rec.recipient}, expires ${built.expiresAt ?? 'not given'}`,
      );
      const verdict = signer.check(
        built.transaction,
        { amount: rec.amount, recipient: rec.recipient, to: rec.to },
        { batchId: ctx.batchId, transferId: ctx.transferId },
      );
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
      ctx.report(
        'sign',
        `checked (it does only the requested payment) and signed by ${signer.address}, not the fee payer`,
      );
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
    await beginSend(
      ctx,
      rec,
      { call: `POST /sdk/v1/solana/submit (intent ${intentId})`, idempotencyKey: key },
      fresh,
    );
    try {
      const res = await service.submitSolanaTx(
        { intentId, signedTransaction: signed },
        { idempotencyKey: key },
      );
      ctx.report(
        'answer',
        `accepted: intent ${res.intentId || intentId} (${res.status}), signature ${res.txSignature ?? 'not given'}`,
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
