import type { EvmChain } from '../../domain/chains.ts';
import { formatUsdc } from '../../domain/money.ts';
import type { PermitPayload } from '../../domain/permit.ts';
import { nextPayloadGen, permitPatch, type RunRecord } from '../../store/saved-steps.ts';
import type { EvmSigner } from '../../signing/types.ts';
import { addEvidence, current, saveStep } from '../context.ts';
import { reserveDailySpendAhead } from '../daily-cap.ts';
import type { EvmRun } from './owner-turn.ts';
import { shortAddress } from '../../domain/addresses.ts';
import { mayDiscardPermit, unsentSiteNow } from './permit-discard.ts';

/*
 * A new permit for a transfer: signed with the nonce its lease (or the pool's prepare slot) gives,
 * and the fields it is saved with. A permit signed while the transfer holds the lease is saved in
 * the same write that marks its first send begun (send-attempt.ts beginSend). A permit *prepared*
 * while another transfer's permit is in flight (nonce-manager.ts) is saved on its own, marked
 * `prepared=1` and unsent — `send_state` is never `sending` for it, `sends` and `attempts` are not
 * touched — and is sent only once the lease is this transfer's at that very nonce.
 */

/** A signed, unsent permit this close to its deadline is replaced rather than sent. */
export const PERMIT_MIN_LIFE_MS = 60_000;

const isoOfSeconds = (s: string) => new Date(Number(s) * 1000).toISOString();

/** Signs a permit for the transfer's amount with `nonce`, deadline PERMIT_DEADLINE_SECONDS from now. */
export async function signPermit(
  by: { readonly ctx: EvmRun['ctx']; readonly chain: EvmChain; readonly signer: EvmSigner },
  nonce: bigint,
  what: 'signed' | 'prepared',
): Promise<PermitPayload> {
  const { ctx, chain, signer } = by;
  const rec = current(ctx);
  const deadline = BigInt(Math.floor(ctx.now() / 1000) + ctx.deps.config.permitDeadlineSeconds);
  const permit = await signer.signPermit({ chain, amount: rec.amount, nonce, deadline });
  // The line reads the same either way (ops tools match it); a prepared permit says when it goes.
  const when = what === 'prepared' ? ` (prepared: sent once nonce ${nonce - 1n} is accepted)` : '';
  ctx.report(
    'sign',
    `permit signed: ${chain}, owner ${shortAddress(permit.owner)}, spender ${shortAddress(permit.spender)}, value ${formatUsdc(rec.amount)} USDC, nonce ${permit.nonce}, deadline ${isoOfSeconds(permit.deadline)}${when}`,
  );
  return permit;
}

/**
 * The pool offers this transfer nonce `nonce` to prepare while another transfer's permit is in
 * flight: sign it and save it unsent, and return the record as saved. Undefined when this transfer
 * may not make a new permit now: its saved permit may have been processed (uncertain, or cut off
 * mid-send), a refusal is being settled, or the daily cap has no room for it (daily-cap.ts: taken
 * here, saved with the permit, so that its round trips are not on the owner's serial path). A saved permit that provably never moved money (never
 * processed, as keptPermit judges it in evm-flow.ts, the chain not showing its nonce used) is
 * replaced; one with this very nonce and time enough left is kept as it is.
 */
export async function preparePermit(
  run: EvmRun & { readonly signer: EvmSigner },
  nonce: bigint,
): Promise<RunRecord | undefined> {
  const { ctx, signer } = run;
  const rec = current(ctx);
  if (rec.state !== 'in_progress') return undefined;
  const { steps } = rec;
  if (steps.uncertain || steps.sendState === 'sending' || steps.refusal) return undefined;
  const saved = steps.permit;
  if (saved && BigInt(saved.nonce) === nonce && saved.owner === signer.address) {
    if (Number(saved.deadline) * 1000 - ctx.now() >= PERMIT_MIN_LIFE_MS) return rec;
  }
  if (saved) {
    // Not over a permit the chain may have executed: the lease's turn settles that (evm-flow.ts).
    if (BigInt(saved.nonce) !== nonce && !(await mayDiscardPermit(run, saved)).discard) return undefined;
    await addEvidence(
      ctx,
      `discarded unsent permit with nonce ${saved.nonce} (preparing one with nonce ${nonce})`,
    );
  }
  const spend = await reserveDailySpendAhead(ctx);
  if (!spend) return undefined;
  const permit = await signPermit(run, nonce, 'prepared');
  const gen = nextPayloadGen(steps);
  // Where it is saved unsent is read before the write: a failover in between shows as another site.
  const unsent = { at: ctx.now(), site: unsentSiteNow(run) };
  return await saveStep(ctx, { ...permitPatch(permit, gen, unsent), ...spend });
}
