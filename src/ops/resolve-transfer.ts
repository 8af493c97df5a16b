import { CCTP_DOMAIN } from '../domain/chains.ts';
import { ValidationError } from '../domain/errors.ts';
import { recordAudit } from '../store/audit.ts';
import { releaseOwnerReservation } from '../store/owner-balance.ts';
import { savedSteps, type StepsPatch } from '../store/saved-steps.ts';
import { createTransferStore } from '../store/transfer-store.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { requireBatch, type IntentFollowSink, type OpsDeps } from './ops-deps.ts';
import { NotFoundError } from './ops-error.ts';

/**
 * `--submitted` on the CCTP road (docs/cctp.md "needs_review on this road"): the intent must be the
 * burn, `cctp:<source domain>:<burn tx hash>`; the burn and a pending attestation are recorded, so
 * the follower attests and mints it as any submitted burn.
 */
function cctpSubmitted(rec: TransferRecord, intentId: string): StepsPatch {
  const domain = CCTP_DOMAIN[rec.from];
  const m = new RegExp(`^cctp:${domain}:(0x[0-9a-fA-F]{64})$`).exec(intentId);
  if (!m?.[1]) {
    throw new ValidationError(
      'USDC_USAGE_INTENT',
      `a transfer on the ${rec.via} road from ${rec.from} is resolved with its burn: --submitted cctp:${domain}:<burn tx hash>`,
    );
  }
  const burnTx = m[1].toLowerCase();
  return { txHash: burnTx, intentStatus: 'pending', cctp: { burnTx, attestation: 'pending' } };
}

/**
 * Settles a `needs_review` transfer after the operator checked the chain. `--not-sent` is refused
 * while the signed permit or transaction could still execute.
 */
export async function resolveTransfer(
  deps: OpsDeps & { readonly intents?: IntentFollowSink },
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
  let fields: StepsPatch;
  if ('submitted' in decision) {
    if (!/^[A-Za-z0-9_.:-]{1,200}$/.test(decision.submitted)) {
      throw new ValidationError('USDC_USAGE_INTENT', 'the intent id has characters an intent id never has');
    }
    to = 'submitted';
    fields = { intentId: decision.submitted, error: null, resolvedBy: deps.actor };
    // On the CCTP road the intent is the burn: followed from here to its attestation and mint.
    if (rec.via !== 'service') fields = { ...fields, ...cctpSubmitted(rec, decision.submitted) };
  } else if (rec.via !== 'service' && rec.cctp.burnGen !== null) {
    // A signed EVM transaction has no expiry: it can execute until its nonce is used by another.
    throw new ValidationError(
      'USDC_RESOLVE_TOO_EARLY',
      `its signed CCTP burn (${rec.cctp.burnTx ?? 'not yet broadcast'}) has no expiry and could still execute until its owner's nonce is used by another transaction; when the chain shows it mined, resolve with --submitted cctp:${CCTP_DOMAIN[rec.from]}:<burn tx hash> (the mint follows)`,
    );
  } else {
    const steps = savedSteps(rec);
    const deadline = steps.permitDeadline ? steps.permitDeadline * 1000 : 0;
    const expires = steps.solanaExpiresAt ?? 0;
    const live = Math.max(deadline, Number.isFinite(expires) ? expires : 0);
    const hasUnboundedTx = steps.solanaSigned !== null && steps.solanaExpiresAt === null;
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
      error: { code: 'resolved_not_sent', message: `an operator found it not sent (${deps.actor})` },
      resolvedBy: deps.actor,
    };
  }
  const res = await store.transition(batchId, transferId, { expected: ['needs_review'], to, fields });
  if (!res.ok)
    throw new ValidationError('USDC_RESOLVE_STATE', `transfer ${transferId} changed state meanwhile`);
  if (to === 'failed') await releaseOwnerReservation(deps.redis, deps.prefix, rec);
  // A resolved payment is followed like any submitted one, so that its batch can settle.
  if ('submitted' in decision) await deps.intents?.followIntent(batchId, transferId, decision.submitted);
  await recordAudit(deps, {
    who: deps.actor,
    action: 'resolve',
    batch: batchId,
    detail: {
      transfer: transferId,
      to,
      ...('submitted' in decision ? { intent_id: decision.submitted } : {}),
    },
  });
  return { state: to };
}
