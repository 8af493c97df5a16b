import { describe, expect, it } from 'vitest';
import {
  approvalAmount,
  earlyAllowanceHolds,
  decideAfterBurnStep,
  decideAfterMintStep,
} from '../../src/pipeline/cctp/cctp-decision.ts';
import type { OwnerTxStep } from '../../src/signing/evm/owner-tx/owner-tx-sender.ts';

const HASH = `0x${'ab'.repeat(32)}`;
const sent: OwnerTxStep = { kind: 'sent', nonce: 3n, hash: HASH, version: 1, how: 'first' };
const pending: OwnerTxStep = {
  kind: 'waiting',
  reason: 'pending',
  detail: 'in the node',
  nonce: 3n,
  hash: HASH,
};
const capped: OwnerTxStep = {
  kind: 'waiting',
  reason: 'gas-cap',
  detail: 'over the cap',
  nonce: 3n,
  hash: undefined,
};
const noGas: OwnerTxStep = {
  kind: 'waiting',
  reason: 'owner-lacks-gas',
  detail: 'no gas',
  nonce: undefined,
  hash: undefined,
};
const mined = (success: boolean, filler = false): OwnerTxStep => ({
  kind: 'mined',
  nonce: 3n,
  hash: HASH,
  success,
  filler,
});
const replaced: OwnerTxStep = {
  kind: 'replaced-by-other',
  nonce: 3n,
  chainNonce: 4n,
  hashes: [HASH],
  holder: { hash: `0x${'b'.repeat(64)}`, block: 9n, finalized: 9n },
};

describe('the CCTP road: decisions after a step of the burn', () => {
  it("watches a sent or pending burn, waits on the cap and the owner's gas", () => {
    expect(decideAfterBurnStep(sent, { replacedBefore: false })).toBe('watch');
    expect(decideAfterBurnStep(pending, { replacedBefore: false })).toBe('watch');
    expect(decideAfterBurnStep(capped, { replacedBefore: false })).toBe('wait');
    expect(decideAfterBurnStep(noGas, { replacedBefore: false })).toBe('wait');
  });
  it('is submitted when mined with status 1, failed (nothing moved) with status 0', () => {
    expect(decideAfterBurnStep(mined(true), { replacedBefore: false })).toBe('submitted');
    expect(decideAfterBurnStep(mined(false), { replacedBefore: false })).toBe('reverted');
  });
  it('makes a new burn only once the chain showed twice that the burn can never execute', () => {
    expect(decideAfterBurnStep(replaced, { replacedBefore: false })).toBe('confirm');
    expect(decideAfterBurnStep(replaced, { replacedBefore: true })).toBe('new_burn');
    expect(decideAfterBurnStep(mined(true, true), { replacedBefore: false })).toBe('new_burn');
  });
});

describe('the CCTP road: decisions after a step of the mint', () => {
  it('is minted when mined with status 1; anything else that used its nonce asks usedNonces', () => {
    expect(decideAfterMintStep(sent)).toBe('watch');
    expect(decideAfterMintStep(capped)).toBe('wait');
    expect(decideAfterMintStep(mined(true))).toBe('minted');
    expect(decideAfterMintStep(mined(false))).toBe('check_used');
    expect(decideAfterMintStep(mined(true, true))).toBe('check_used');
    expect(decideAfterMintStep(replaced)).toBe('check_used');
  });
});

describe('approvalAmount: what one approval covers', () => {
  const current = { id: 'b', amount: 5n };
  const pending = [
    { id: 'a', amount: 3n },
    { id: 'b', amount: 5n },
    { id: 'c', amount: 7n },
  ];
  it("is the sum of the owner's queued rows (the current one counted once)", () => {
    expect(approvalAmount({ current, pending, balance: 1_000n })).toBe(15n);
  });
  it('adds the current row when the list does not hold it', () => {
    expect(approvalAmount({ current: { id: 'z', amount: 4n }, pending, balance: 1_000n })).toBe(19n);
  });
  it('never more than the owner holds, never less than the current row', () => {
    expect(approvalAmount({ current, pending, balance: 9n })).toBe(9n);
    expect(approvalAmount({ current, pending, balance: 2n })).toBe(5n);
    expect(approvalAmount({ current, pending: [], balance: 0n })).toBe(5n);
  });
});

describe('earlyAllowanceHolds: an allowance read beside the look for unmined calls', () => {
  const seen = (nonce: bigint, at: number) => ({ nonce, at });
  it('holds where no call of the owner was ever given a nonce, or none is mined', () => {
    expect(earlyAllowanceHolds({ chainNonce: undefined, seenMined: undefined, readSentAt: 5 })).toBe(true);
    expect(earlyAllowanceHolds({ chainNonce: 0n, seenMined: undefined, readSentAt: 5 })).toBe(true);
  });
  it('holds where this process saw the call just below the chain nonce mined before the read was sent', () => {
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: seen(6n, 4), readSentAt: 5 })).toBe(true);
  });
  it('does not hold where that call was seen mined only as the read went, or after', () => {
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: seen(6n, 5), readSentAt: 5 })).toBe(false);
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: seen(6n, 9), readSentAt: 5 })).toBe(false);
  });
  it('does not hold where the chain mined a call this process did not see mined (another worker, an outside signer)', () => {
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: undefined, readSentAt: 5 })).toBe(false);
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: seen(5n, 1), readSentAt: 5 })).toBe(false);
  });
  it('does not hold where the look read a chain nonce below what this process saw mined (a lagging node)', () => {
    expect(earlyAllowanceHolds({ chainNonce: 7n, seenMined: seen(8n, 1), readSentAt: 5 })).toBe(false);
  });
});
