import type { PermitPayload } from '../../service/types.ts';
import { current, jittered, Later } from '../context.ts';
import type { EvmRun } from './owner-turn.ts';

/*
 * docs/replicated-redis.md: a saved permit is never taken for unsent while the chain shows its
 * nonce used. A record brought back by a failover can show a permit without the mark of the send
 * that paid it (the mark is acknowledged by the replicas before every send, so only a setting that
 * asks for fewer replicas than Redis has, or data older than that rule, leaves such a record): the
 * chain is asked before any saved permit is thrown away for a new one with another nonce.
 */

/** May the saved permit be discarded as one that never moved money, and if not, what was read. */
export type DiscardVerdict =
  { readonly discard: true } | { readonly discard: false; readonly evidence: string };

/**
 * Reads `nonces(owner)` at the chain's head: the permit may be discarded while the chain has not
 * used its nonce, or when the records show that another payload used it — the service refused this
 * permit's first send, or accepted another transfer's permit with that nonce (the nonce pool's
 * `used` set, written only after such an acceptance). A chain without RPC says nothing: the record
 * alone decides, as before. A failed read waits (the run comes back to ask again).
 */
export async function mayDiscardPermit(run: EvmRun, permit: PermitPayload): Promise<DiscardVerdict> {
  const { ctx, evm, chain } = run;
  const nonce = BigInt(permit.nonce);
  if (current(ctx).steps.refusal?.nonce === nonce) return { discard: true };
  let reading;
  try {
    reading = await evm.chain.permitNonceAtHead(chain, permit.owner);
  } catch (err) {
    throw new Later(
      jittered(ctx, 2_000),
      `cannot read ${chain} nonces(owner) before replacing a saved permit: ${(err as Error).message.slice(0, 120)}`,
      'nonce_chain',
    );
  }
  if (reading === undefined || reading.nonce <= nonce) return { discard: true };
  const by = await evm.nonces.usedBy(chain, permit.owner, nonce);
  if (by !== undefined && by !== `${ctx.batchId}/${ctx.transferId}`) return { discard: true };
  return {
    discard: false,
    evidence:
      `the saved permit with nonce ${nonce} was about to be replaced, but ${chain} nonces(owner) is ` +
      `${reading.nonce} at block ${reading.block.number}: its nonce is used and nothing recorded shows ` +
      'that another payload used it, so this permit may have paid',
  };
}
