import type { OwnerTxStep } from '../../signing/evm/owner-tx/owner-tx-sender.ts';

/*
 * What the CCTP road does after one step of an owner's call (docs/cctp.md "Exactly once on this
 * road"): pure decisions over what the step said, as failure-decision.ts is for the service road.
 */

/**
 * After a step of the burn:
 * - `watch`: sent, or in the node's hands: look again as blocks come;
 * - `wait`: it cannot be sent now (the gas cap, the owner's gas, the replicas): hand the job back;
 * - `submitted`: mined with status 1;
 * - `reverted`: mined with status 0: it moved nothing (`failed`, the receipt the evidence);
 * - `confirm`: its nonce is used by another transaction: asked once more before believing it;
 * - `new_burn`: the chain shows it can never execute (confirmed): a new burn, a new call, may be made.
 */
export type BurnAction = 'watch' | 'wait' | 'submitted' | 'reverted' | 'confirm' | 'new_burn';

export function decideAfterBurnStep(
  step: OwnerTxStep,
  facts: { readonly replacedBefore: boolean },
): BurnAction {
  switch (step.kind) {
    case 'sent':
      return 'watch';
    case 'waiting':
      return step.reason === 'pending' ? 'watch' : 'wait';
    case 'mined':
      // A filler mined at its nonce: the call was given up before anything of it was signed.
      if (step.filler) return 'new_burn';
      return step.success ? 'submitted' : 'reverted';
    case 'replaced-by-other':
      return facts.replacedBefore ? 'new_burn' : 'confirm';
  }
}

/**
 * After a step of the mint (the message's nonce not yet seen used before it):
 * - `watch` / `wait` as for the burn;
 * - `minted`: mined with status 1;
 * - `check_used`: mined reverted, or its nonce used by another transaction: `usedNonces` says
 *   whether the message was minted (by anyone: done); if not, a new mint call is made.
 */
export type MintAction = 'watch' | 'wait' | 'minted' | 'check_used';

export function decideAfterMintStep(step: OwnerTxStep): MintAction {
  switch (step.kind) {
    case 'sent':
      return 'watch';
    case 'waiting':
      return step.reason === 'pending' ? 'watch' : 'wait';
    case 'mined':
      return step.success && !step.filler ? 'minted' : 'check_used';
    case 'replaced-by-other':
      return 'check_used';
  }
}

/**
 * How much an owner approves to TokenMessengerV2 (PRODUCT §9 step 2, docs/cctp.md "The flow"): what
 * its queued transfers on the chain need (`pending`: the amounts of the batch's rows from that chain
 * not burned yet and not another owner's), the current transfer always among them, never more than
 * the owner holds (a burn past its balance would revert whatever the allowance) — and never less than
 * the current transfer. Never unlimited: at most the sum of those amounts.
 */
export function approvalAmount(facts: {
  readonly current: { readonly id: string; readonly amount: bigint };
  readonly pending: readonly { readonly id: string; readonly amount: bigint }[];
  readonly balance: bigint;
}): bigint {
  const { current, pending, balance } = facts;
  let need = pending.reduce((n, p) => n + p.amount, 0n);
  if (!pending.some((p) => p.id === current.id)) need += current.amount;
  const capped = need < balance ? need : balance;
  return capped > current.amount ? capped : current.amount;
}

/**
 * Whether the owner's allowance, read beside the look for its unmined calls rather than after it,
 * may decide the next call (docs/cctp.md "The flow"). Read after the look, it shows every call the
 * look found mined (the chain's nonce: all below it); read beside it, it does where those were mined
 * before it was sent: where no call of the owner was ever given a nonce (`chainNonce` undefined) or
 * none is mined (0), or where this process saw the one just below the chain's nonce mined before it
 * sent the read (nonces are mined in order, so every call below it was too). Otherwise it is read
 * again, after the look.
 */
export function earlyAllowanceHolds(facts: {
  readonly chainNonce: bigint | undefined;
  /** The owner's transaction with the highest nonce this process saw mined, and when (its clock). */
  readonly seenMined: { readonly nonce: bigint; readonly at: number } | undefined;
  /** When the allowance read was sent (the same clock). */
  readonly readSentAt: number;
}): boolean {
  const { chainNonce, seenMined, readSentAt } = facts;
  if (chainNonce === undefined || chainNonce === 0n) return true;
  return seenMined !== undefined && seenMined.nonce === chainNonce - 1n && seenMined.at < readSentAt;
}
