/*
 * What to do next with one transaction of a treasury owner (docs/cctp.md "The owner's
 * transactions"): a pure decision, from facts the sender gathers (its saved versions, the chain's
 * nonce of the owner, a receipt, the blocks since it was broadcast, the chain's fees, the cap, the
 * owner's gas) to one step. The writes and sends it leads to are the sender's
 * (owner-tx-sender.ts); the rules are here, tested without Redis or a chain
 * (test/unit/owner-tx-decision.test.ts).
 *
 * The money rules under it: a signed call is only ever sent again identically, or replaced at its
 * own nonce by the same call with both fees at least 10% higher (what nodes require of a
 * replacement), never above the cap; a nonce is never left empty (a call given up before it was
 * signed is replaced by a zero-value transaction to the owner itself); a call can never execute
 * only when the chain proves it: the mined transaction that holds its nonce is found, and is none
 * of our versions. A nonce used whose holder cannot be read is looked at again; for long, an
 * operator looks (never a belief from blocks gone by: a lagging RPC may hide our receipt for long).
 */

/** EIP-1559 fees per gas unit, wei. */
export type Fees = { readonly maxFee: bigint; readonly tip: bigint };

/** One signed version of the transaction, as saved before it was first sent. */
export type SavedVersion = { readonly hash: string; readonly fees: Fees };

/** What the sender knows when it decides. */
export type TxFacts = {
  /** The transaction's nonce. */
  readonly nonce: bigint;
  /** Signed versions, oldest first (each a re-pricing of the one before); empty: nothing signed. */
  readonly versions: readonly SavedVersion[];
  /** The call was given up before it was signed: its nonce is filled by a zero-value self-transaction. */
  readonly abandoned: boolean;
  /** Block number when the latest version was last broadcast; undefined: saved, maybe never sent. */
  readonly sentAtBlock: bigint | undefined;
  /** The owner's nonce at the chain's latest block (its mined transactions), read before the receipt. */
  readonly chainNonce: bigint;
  /** A receipt of one of the versions. */
  readonly receipt: { readonly hash: string; readonly success: boolean } | undefined;
  /** The chain's latest block number. */
  readonly head: bigint;
  /** The next block's base fee, and the fees the chain suggests now (maxFee with headroom). */
  readonly baseFee: bigint;
  readonly suggested: Fees;
  /** MAX_GAS_GWEI_<CHAIN> in wei; undefined: no cap. */
  readonly cap: bigint | undefined;
  /** The owner's native balance, and what the transaction needs beside its gas (its value). */
  readonly balance: bigint;
  readonly gas: bigint;
  readonly value: bigint;
  /** How many blocks a broadcast transaction may stay unmined before it is looked at again. */
  readonly repriceAfterBlocks: number;
  /**
   * The mined transaction that holds the nonce, looked up in the chain's blocks when the nonce is
   * used and no receipt of ours is seen (the first block whose state counts past the nonce, and the
   * owner's transaction at that nonce in it); `unknown`: the blocks or the state could not be read
   * (a node behind, pruned state, an RPC error); undefined: not looked up.
   */
  readonly nonceHolder: NonceHolder | 'unknown' | undefined;
  /**
   * When (unix ms) the nonce was first seen used with no receipt of ours (saved with the
   * transaction); undefined: not seen so, or saved without its time.
   */
  readonly usedSeenAtMs: number | undefined;
  /** Now, unix ms. */
  readonly now: number;
  /** How long the holder of a used nonce may stay unreadable before an operator must look, ms. */
  readonly unprovenAfterMs: number;
};

/** The mined transaction that holds a nonce, and its block. */
/**
 * The mined transaction holding a nonce: its hash, its block, and the chain's finalized block when
 * it was found (a holder in a block not final yet may still be dropped by a reorg).
 */
export type NonceHolder = { readonly hash: string; readonly block: bigint; readonly finalized: bigint };

export type WaitReason = 'pending' | 'gas-cap' | 'owner-lacks-gas';

export type TxDecision =
  /** Nothing is signed: sign the call at `fees` (saved, then broadcast). */
  | { readonly kind: 'sign'; readonly fees: Fees }
  /** Nothing is signed and the call was given up: sign the zero-value self-transaction at `fees`. */
  | { readonly kind: 'fill-gap'; readonly fees: Fees }
  /** Send the latest version again, identically (never sent for sure, or a node seems to have dropped it). */
  | { readonly kind: 'rebroadcast' }
  /** Sign the same call again at its nonce at `fees` (both at least 10% above the latest version's). */
  | { readonly kind: 'reprice'; readonly fees: Fees }
  /** Nothing to do now; `need` is the wei the owner lacks (owner-lacks-gas), or the price over the cap. */
  | { readonly kind: 'wait'; readonly reason: WaitReason; readonly need?: bigint }
  /** A version is mined: `success` false is a reverted transaction (its nonce is used all the same). */
  | { readonly kind: 'mined'; readonly hash: string; readonly success: boolean }
  /**
   * The nonce is used, no receipt of ours is seen, and the transaction holding it cannot be read
   * yet: the first sighting is saved, and it is looked at again as blocks come.
   */
  | { readonly kind: 'nonce-used' }
  /**
   * One of our versions holds the nonce (found in its block) but its receipt is not served yet (a
   * node behind): it waits for the receipt, never signs anything else.
   */
  | { readonly kind: 'ours-unreceipted'; readonly holder: NonceHolder }
  /**
   * The nonce is held by a mined transaction that is none of ours, in a block not final yet: a reorg
   * could drop it and let ours execute, so nothing else is signed until its block is final.
   */
  | { readonly kind: 'holder-not-final'; readonly holder: NonceHolder }
  /**
   * The nonce is held by a mined transaction that is none of ours, in a final block: the saved call
   * can never execute.
   */
  | { readonly kind: 'replaced-by-other'; readonly holder: NonceHolder }
  /**
   * The nonce has been used for `unprovenAfterMs` with neither a receipt of ours nor its holder
   * readable: its fate cannot be known, an operator looks.
   */
  | { readonly kind: 'unproven' };

/** Nodes take a replacement whose fees are both at least 10% higher; one wei more at the least. */
export function bumped(fee: bigint): bigint {
  const tenth = (fee + 9n) / 10n;
  return fee + (tenth > 0n ? tenth : 1n);
}

/** The gas and value the transaction may cost the owner at `fees`. */
export function costAt(facts: Pick<TxFacts, 'gas' | 'value'>, fees: Fees): bigint {
  return facts.gas * fees.maxFee + facts.value;
}

/**
 * The fees of a first signing: the chain's suggestion, its maxFee lowered to the cap; a wait when
 * even the next block's base fee and the tip are above the cap.
 */
function firstFees(f: TxFacts): Fees | { readonly over: bigint } {
  const { suggested, cap } = f;
  if (cap === undefined) return suggested;
  if (f.baseFee + suggested.tip > cap) return { over: f.baseFee + suggested.tip };
  const maxFee = suggested.maxFee < cap ? suggested.maxFee : cap;
  return { maxFee, tip: suggested.tip < maxFee ? suggested.tip : maxFee };
}

/**
 * The fees of a re-pricing of `last`: at least 10% above each of its fees, at least the chain's
 * suggestion, the maxFee lowered to the cap (never below the 10% step, nor below what the next
 * block asks: then it waits); undefined when the chain asks no more than `last` already pays (the
 * transaction is not under-priced).
 */
function repricedFees(f: TxFacts, last: Fees): Fees | { readonly over: bigint } | undefined {
  const { suggested, cap } = f;
  if (suggested.maxFee <= last.maxFee && suggested.tip <= last.tip && f.baseFee + last.tip <= last.maxFee)
    return undefined;
  const floor = { maxFee: bumped(last.maxFee), tip: bumped(last.tip) };
  let maxFee = suggested.maxFee > floor.maxFee ? suggested.maxFee : floor.maxFee;
  const tip = suggested.tip > floor.tip ? suggested.tip : floor.tip;
  if (maxFee < tip) maxFee = tip;
  if (cap !== undefined && maxFee > cap) {
    // Above the cap, or capped below what the next block asks: no use re-pricing, it waits.
    if (floor.maxFee > cap || f.baseFee + tip > cap) {
      const asked = floor.maxFee > f.baseFee + tip ? floor.maxFee : f.baseFee + tip;
      return { over: asked };
    }
    maxFee = cap;
  }
  return { maxFee, tip };
}

/** A signing at `fees`, or the wait the owner's balance makes it. */
function signing(f: TxFacts, kind: 'sign' | 'fill-gap' | 'reprice', fees: Fees): TxDecision {
  const cost = costAt(f, fees);
  if (f.balance < cost) return { kind: 'wait', reason: 'owner-lacks-gas', need: cost - f.balance };
  return { kind, fees };
}

/**
 * The nonce is used and no receipt of ours is seen: its holder decides. Ours: the receipt comes
 * (a node behind serves it later). Another's: proven, the call can never execute. Unreadable: look
 * again, and after `unprovenAfterMs` an operator looks — never judged replaced without the other
 * transaction found (a mined burn judged replaced would be burned again).
 */
function decideUsedNonce(f: TxFacts): TxDecision {
  const holder = f.nonceHolder;
  if (holder !== undefined && holder !== 'unknown') {
    const ours = f.versions.some((v) => v.hash.toLowerCase() === holder.hash.toLowerCase());
    if (ours) return { kind: 'ours-unreceipted', holder };
    // Another's, but a reorg could still drop it and let ours execute: proven once its block is final.
    return { kind: holder.block <= holder.finalized ? 'replaced-by-other' : 'holder-not-final', holder };
  }
  const since = f.usedSeenAtMs;
  if (since !== undefined && f.now - since >= f.unprovenAfterMs) return { kind: 'unproven' };
  return { kind: 'nonce-used' };
}

/**
 * A receipt of one of the versions decides alone, whatever else the chain says: the call is mined
 * (decideOwnerTx's first rule; the sender reads nothing more once it has one).
 */
export function decideByReceipt(
  receipt: TxFacts['receipt'],
): Extract<TxDecision, { kind: 'mined' }> | undefined {
  return receipt ? { kind: 'mined', hash: receipt.hash, success: receipt.success } : undefined;
}

/** The one decision about a transaction of an owner. */
export function decideOwnerTx(f: TxFacts): TxDecision {
  const mined = decideByReceipt(f.receipt);
  if (mined) return mined;
  if (f.chainNonce > f.nonce) return decideUsedNonce(f);
  const last = f.versions.at(-1);
  if (!last) {
    const fees = firstFees(f);
    if ('over' in fees) return { kind: 'wait', reason: 'gas-cap', need: fees.over };
    return signing(f, f.abandoned ? 'fill-gap' : 'sign', fees);
  }
  if (f.sentAtBlock === undefined) return { kind: 'rebroadcast' };
  if (f.head - f.sentAtBlock < BigInt(f.repriceAfterBlocks)) return { kind: 'wait', reason: 'pending' };
  const fees = repricedFees(f, last.fees);
  if (fees === undefined) return { kind: 'rebroadcast' };
  if ('over' in fees) return { kind: 'wait', reason: 'gas-cap', need: fees.over };
  return signing(f, 'reprice', fees);
}
