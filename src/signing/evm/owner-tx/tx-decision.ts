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
 * signed is replaced by a zero-value transaction to the owner itself); a nonce the chain shows used
 * by none of our versions, for some blocks in a row, means the call can never execute.
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
   * The head when the nonce was first seen used with none of our versions' receipts found (saved
   * with the transaction); undefined: not seen so.
   */
  readonly usedSeenAt: bigint | undefined;
  /**
   * How many blocks the nonce must stay used with no receipt of ours before another transaction is
   * believed to hold it: an RPC behind a balancer may answer the nonce from a node at the head and
   * the receipt from one some blocks behind.
   */
  readonly replacedAfterBlocks: number;
};

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
   * The nonce is used and no receipt of ours is seen, not yet for `replacedAfterBlocks` blocks: the
   * first sighting is saved (its head), and it is looked at again as blocks come.
   */
  | { readonly kind: 'nonce-used' }
  /** The nonce is used by a transaction that is none of ours: the saved call can never execute. */
  | { readonly kind: 'replaced-by-other' };

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

/** The one decision about a transaction of an owner. */
export function decideOwnerTx(f: TxFacts): TxDecision {
  if (f.receipt) return { kind: 'mined', hash: f.receipt.hash, success: f.receipt.success };
  // Read before the receipts: a nonce used then, with none of our versions mined now, is another's —
  // once that has held for some blocks (a receipt read from a node behind the one that counted the
  // nonce is missing for a while: a mined burn judged replaced would be burned again).
  if (f.chainNonce > f.nonce) {
    const since = f.usedSeenAt;
    if (since === undefined || f.head - since < BigInt(f.replacedAfterBlocks)) return { kind: 'nonce-used' };
    return { kind: 'replaced-by-other' };
  }
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
