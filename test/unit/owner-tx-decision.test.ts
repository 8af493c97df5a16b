import { describe, expect, it } from 'vitest';
import {
  bumped,
  decideByReceipt,
  decideOwnerTx,
  type TxFacts,
} from '../../src/signing/evm/owner-tx/tx-decision.ts';

/* docs/cctp.md "The owner's transactions": the one decision about an owner's transaction. */

const GWEI = 1_000_000_000n;

function facts(over: Partial<TxFacts> = {}): TxFacts {
  return {
    nonce: 7n,
    versions: [],
    abandoned: false,
    sentAtBlock: undefined,
    chainNonce: 7n,
    receipt: undefined,
    head: 100n,
    baseFee: 1n * GWEI,
    suggested: { maxFee: 3n * GWEI, tip: 1n * GWEI },
    cap: undefined,
    balance: 10n ** 18n,
    gas: 100_000n,
    value: 0n,
    repriceAfterBlocks: 3,
    nonceHolder: undefined,
    usedSeenAtMs: undefined,
    now: 10_000_000,
    unprovenAfterMs: 3_600_000,
    ...over,
  };
}

const v1 = { hash: '0xaa', fees: { maxFee: 3n * GWEI, tip: 1n * GWEI } };

describe('an owner transaction: what to do next', () => {
  it('signs a call at the suggested fees; fills the nonce of a call given up instead', () => {
    expect(decideOwnerTx(facts())).toEqual({ kind: 'sign', fees: { maxFee: 3n * GWEI, tip: 1n * GWEI } });
    expect(decideOwnerTx(facts({ abandoned: true }))).toMatchObject({ kind: 'fill-gap' });
  });

  it('lowers a first maxFee to the cap, and waits when the next block alone is above it', () => {
    expect(decideOwnerTx(facts({ cap: 2n * GWEI }))).toEqual({
      kind: 'sign',
      fees: { maxFee: 2n * GWEI, tip: 1n * GWEI },
    });
    expect(decideOwnerTx(facts({ cap: 2n * GWEI - 1n }))).toEqual({
      kind: 'wait',
      reason: 'gas-cap',
      need: 2n * GWEI,
    });
  });

  it('an owner without the gas for the transaction waits, with how much it lacks', () => {
    const cost = 100_000n * 3n * GWEI + 5n;
    expect(decideOwnerTx(facts({ balance: cost - 1n, value: 5n }))).toEqual({
      kind: 'wait',
      reason: 'owner-lacks-gas',
      need: 1n,
    });
    expect(decideOwnerTx(facts({ balance: cost, value: 5n }))).toMatchObject({ kind: 'sign' });
  });

  it('a saved version not known to be sent is sent again identically (a crash before the broadcast)', () => {
    expect(decideOwnerTx(facts({ versions: [v1] }))).toEqual({ kind: 'rebroadcast' });
  });

  it('a broadcast version waits a few blocks', () => {
    expect(decideOwnerTx(facts({ versions: [v1], sentAtBlock: 98n }))).toEqual({
      kind: 'wait',
      reason: 'pending',
    });
  });

  it('stuck and under-priced: re-priced, both fees at least 10% up (or the chain’s suggestion)', () => {
    const d = decideOwnerTx(
      facts({
        versions: [v1],
        sentAtBlock: 97n,
        baseFee: 2n * GWEI,
        suggested: { maxFee: 5n * GWEI, tip: 1n * GWEI },
      }),
    );
    expect(d).toEqual({ kind: 'reprice', fees: { maxFee: 5n * GWEI, tip: 1_100_000_000n } });
    const small = decideOwnerTx(
      facts({ versions: [v1], sentAtBlock: 97n, suggested: { maxFee: 3n * GWEI + 1n, tip: 1n * GWEI } }),
    );
    expect(small).toEqual({ kind: 'reprice', fees: { maxFee: 3_300_000_000n, tip: 1_100_000_000n } });
  });

  it('stuck but priced as the chain asks: sent again identically (a node may have dropped it)', () => {
    expect(decideOwnerTx(facts({ versions: [v1], sentAtBlock: 90n }))).toEqual({ kind: 'rebroadcast' });
  });

  it('never re-prices above the cap: the maxFee stops at it, or the transaction waits with the reason', () => {
    const stuck = { versions: [v1], sentAtBlock: 90n, suggested: { maxFee: 9n * GWEI, tip: 1n * GWEI } };
    expect(decideOwnerTx(facts({ ...stuck, cap: 4n * GWEI }))).toEqual({
      kind: 'reprice',
      fees: { maxFee: 4n * GWEI, tip: 1_100_000_000n },
    });
    expect(decideOwnerTx(facts({ ...stuck, cap: 3_299_999_999n }))).toEqual({
      kind: 'wait',
      reason: 'gas-cap',
      need: 3_300_000_000n,
    });
  });

  it('waits rather than re-price to a cap below what the next block asks', () => {
    const stuck = { versions: [v1], sentAtBlock: 90n, suggested: { maxFee: 21n * GWEI, tip: 1n * GWEI } };
    expect(decideOwnerTx(facts({ ...stuck, baseFee: 10n * GWEI, cap: 5n * GWEI }))).toEqual({
      kind: 'wait',
      reason: 'gas-cap',
      need: 11_100_000_000n,
    });
  });

  it('a re-pricing the owner cannot pay for waits for gas', () => {
    const stuck = { versions: [v1], sentAtBlock: 90n, suggested: { maxFee: 9n * GWEI, tip: 1n * GWEI } };
    expect(decideOwnerTx(facts({ ...stuck, balance: 100_000n * 9n * GWEI - 1n }))).toMatchObject({
      kind: 'wait',
      reason: 'owner-lacks-gas',
    });
  });

  it('a receipt of any version: mined, with its status', () => {
    const receipt = { hash: '0xaa', success: false };
    expect(decideOwnerTx(facts({ versions: [v1], receipt, chainNonce: 8n }))).toEqual({
      kind: 'mined',
      hash: '0xaa',
      success: false,
    });
  });

  it('a receipt decides alone: the sender, holding one, reads no head, fees or balance, and decides as the whole decision would', () => {
    const receipt = { hash: '0xaa', success: true };
    const holder = { hash: '0xbb', block: 95n, finalized: 95n };
    const others: Partial<TxFacts>[] = [
      { versions: [v1], chainNonce: 8n, nonceHolder: holder },
      { versions: [v1], sentAtBlock: 90n, head: 200n, baseFee: 500n * GWEI, cap: GWEI },
      { abandoned: true, balance: 0n, chainNonce: 7n },
    ];
    for (const over of others) {
      expect(decideByReceipt(receipt)).toEqual(decideOwnerTx(facts({ ...over, receipt })));
    }
    expect(decideByReceipt(undefined)).toBeUndefined();
  });

  it('the nonce held by a mined transaction that is none of ours (found in its final block): replaced by another, proven', () => {
    const holder = { hash: '0xbb', block: 95n, finalized: 95n };
    const sent = { versions: [v1], sentAtBlock: 99n, chainNonce: 8n };
    expect(decideOwnerTx(facts({ ...sent, nonceHolder: holder }))).toEqual({
      kind: 'replaced-by-other',
      holder,
    });
    // Nothing of the call signed: its nonce taken by another all the same.
    expect(decideOwnerTx(facts({ chainNonce: 9n, nonceHolder: holder }))).toEqual({
      kind: 'replaced-by-other',
      holder,
    });
  });

  it('the nonce held by one of our versions whose receipt is not served yet: waits for it, never replaced', () => {
    const v2 = { hash: '0xCC', fees: { maxFee: 4n * GWEI, tip: 2n * GWEI } };
    const holder = { hash: '0xcc', block: 60n, finalized: 0n };
    // However long ago the nonce was first seen used (a node behind may hide the receipt for long).
    const d = decideOwnerTx(
      facts({ versions: [v1, v2], sentAtBlock: 10n, chainNonce: 8n, nonceHolder: holder, usedSeenAtMs: 0 }),
    );
    expect(d).toEqual({ kind: 'ours-unreceipted', holder });
  });

  it('the nonce used and its holder unreadable (a node behind, pruned state): looked at again, never replaced', () => {
    const sent = { versions: [v1], sentAtBlock: 99n, chainNonce: 8n };
    expect(decideOwnerTx(facts(sent))).toEqual({ kind: 'nonce-used' });
    expect(decideOwnerTx(facts({ ...sent, nonceHolder: 'unknown' }))).toEqual({ kind: 'nonce-used' });
    expect(decideOwnerTx(facts({ chainNonce: 9n, nonceHolder: 'unknown' }))).toEqual({ kind: 'nonce-used' });
    // Seen so just under the bound: still looked at again; saved without its time: no bound.
    const seen = { ...sent, nonceHolder: 'unknown' as const };
    expect(decideOwnerTx(facts({ ...seen, usedSeenAtMs: 10_000_000 - 3_599_999 }))).toEqual({
      kind: 'nonce-used',
    });
    expect(decideOwnerTx(facts({ ...seen, usedSeenAtMs: undefined, now: 9e15 }))).toEqual({
      kind: 'nonce-used',
    });
    // Never a re-pricing or a new signing while the nonce is used: the receipt and the holder decide.
    expect(decideOwnerTx(facts({ ...sent, sentAtBlock: 10n }))).toEqual({ kind: 'nonce-used' });
  });

  it('the holder still unreadable unprovenAfterMs after the nonce was first seen used: unproven, an operator looks', () => {
    const seen = { versions: [v1], sentAtBlock: 99n, chainNonce: 8n, nonceHolder: 'unknown' as const };
    expect(decideOwnerTx(facts({ ...seen, usedSeenAtMs: 10_000_000 - 3_600_000 }))).toEqual({
      kind: 'unproven',
    });
    // A receipt of ours, or a proven holder, decides first.
    const receipt = { hash: '0xaa', success: true };
    expect(decideOwnerTx(facts({ ...seen, usedSeenAtMs: 0, receipt }))).toMatchObject({ kind: 'mined' });
    const holder = { hash: '0xbb', block: 1n, finalized: 1n };
    expect(decideOwnerTx(facts({ ...seen, usedSeenAtMs: 0, nonceHolder: holder }))).toMatchObject({
      kind: 'replaced-by-other',
    });
  });

  it('the nonce held by another transaction in a block not final yet: waits (a reorg could drop it), however long', () => {
    const holder = { hash: '0xbb', block: 96n, finalized: 95n };
    const sent = { versions: [v1], sentAtBlock: 99n, chainNonce: 8n, nonceHolder: holder };
    expect(decideOwnerTx(facts(sent))).toEqual({ kind: 'holder-not-final', holder });
    // Never unproven, never replaced, never a new signing while the holder's block is not final.
    expect(decideOwnerTx(facts({ ...sent, usedSeenAtMs: 0 }))).toEqual({ kind: 'holder-not-final', holder });
    expect(decideOwnerTx(facts({ ...sent, nonceHolder: { ...holder, finalized: 96n } }))).toMatchObject({
      kind: 'replaced-by-other',
    });
  });

  it('bumps by a tenth rounded up, and by one wei at the least', () => {
    expect(bumped(0n)).toBe(1n);
    expect(bumped(1n)).toBe(2n);
    expect(bumped(10n)).toBe(11n);
    expect(bumped(11n)).toBe(13n);
    expect(bumped(3n * GWEI)).toBe(3_300_000_000n);
  });
});
