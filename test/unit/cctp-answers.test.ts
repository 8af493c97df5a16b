import { describe, expect, it } from 'vitest';
import {
  attestedBurnMismatches,
  feeBpsFor,
  parseCctpFees,
  parseCctpMessages,
  parseCctpReattest,
  type BurnAsMade,
} from '../../src/domain/cctp-answers.ts';
import {
  addressToBytes32,
  encodeBurnMessageV2,
  encodeMessageV2,
  ZERO_BYTES32,
} from '../../src/domain/cctp.ts';

const MESSENGER = '0x8FE6B999Dc680CcFDD5Bf7EB0974218be2542DAA';
const USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const OWNER = '0x1111111111111111111111111111111111111111';
const RECIPIENT = '0x000000000000000000000000000000000000dEaD';
const NONCE = `0x${'ab'.repeat(32)}` as const;

const made: BurnAsMade = {
  sourceDomain: 6,
  destinationDomain: 3,
  tokenMessenger: MESSENGER,
  destinationTokenMessenger: MESSENGER,
  burnToken: USDC,
  mintRecipient: addressToBytes32(RECIPIENT),
  amount: 1_500_000n,
  owner: OWNER,
  destinationCaller: ZERO_BYTES32,
  maxFee: 500n,
  minFinalityThreshold: 1000,
};

function attested(over: { amount?: bigint; feeExecuted?: bigint; recipient?: string } = {}) {
  const body = encodeBurnMessageV2({
    version: 1,
    burnToken: addressToBytes32(USDC),
    mintRecipient: addressToBytes32(over.recipient ?? RECIPIENT),
    amount: over.amount ?? 1_500_000n,
    messageSender: addressToBytes32(OWNER),
    maxFee: 500n,
    feeExecuted: over.feeExecuted ?? 150n,
    expirationBlock: 0n,
    hookData: '0x',
  });
  return encodeMessageV2({
    version: 1,
    sourceDomain: 6,
    destinationDomain: 3,
    nonce: NONCE,
    sender: addressToBytes32(MESSENGER),
    recipient: addressToBytes32(MESSENGER),
    destinationCaller: ZERO_BYTES32,
    minFinalityThreshold: 1000,
    finalityThresholdExecuted: 1000,
    messageBody: body,
  });
}
const SIG = `0x${'11'.repeat(65)}`;

describe('Circle’s attestation API answers', () => {
  it('parses the fee quotes per finality (a list, or one object in a data envelope)', () => {
    const r = parseCctpFees([
      { finalityThreshold: 1000, minimumFee: 1.3 },
      { finalityThreshold: 2000, minimumFee: 0 },
    ]);
    expect(r.ok && feeBpsFor(r.value, 1000)).toBe(1.3);
    expect(r.ok && feeBpsFor(r.value, 2000)).toBe(0);
    const one = parseCctpFees({ data: { finalityThreshold: 1000, minimumFee: 1 } });
    expect(one.ok && one.value).toEqual([{ finalityThreshold: 1000, minimumFeeBps: 1 }]);
    expect(parseCctpFees([{ finalityThreshold: 1000 }])).toMatchObject({ ok: false });
    expect(parseCctpFees('nope')).toMatchObject({ ok: false });
  });

  it('parses a complete message (decoded, checked) and a pending one', () => {
    const message = attested();
    const r = parseCctpMessages({
      messages: [
        { status: 'complete', message, attestation: SIG, eventNonce: NONCE, cctpVersion: 2 },
        {
          status: 'pending_confirmations',
          attestation: 'PENDING',
          message: '0x',
          delayReason: 'insufficient_fee',
        },
      ],
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value[0]).toMatchObject({ status: 'complete', nonce: NONCE, attestation: SIG });
    expect(r.value[1]).toEqual({ status: 'pending', delayReason: 'insufficient_fee' });
  });

  it('refuses an answer that is not what it says: a cut attestation, another nonce, a short message, an unknown status', () => {
    const message = attested();
    const one = (m: Record<string, unknown>) => parseCctpMessages({ messages: [m] });
    expect(one({ status: 'complete', message, attestation: `0x${'11'.repeat(64)}` })).toMatchObject({
      ok: false,
      problem: expect.stringContaining('64 bytes'),
    });
    expect(
      one({ status: 'complete', message, attestation: SIG, eventNonce: `0x${'cd'.repeat(32)}` }),
    ).toMatchObject({
      ok: false,
      problem: expect.stringContaining("not the message's nonce"),
    });
    expect(one({ status: 'complete', message: message.slice(0, 200), attestation: SIG })).toMatchObject({
      ok: false,
    });
    expect(one({ status: 'done' })).toMatchObject({ ok: false });
    expect(parseCctpMessages({})).toMatchObject({ ok: false });
  });

  it('reads a reattest answer only for the nonce asked about', () => {
    expect(
      parseCctpReattest({ message: 'Re-attestation successfully requested for nonce.', nonce: NONCE }, NONCE),
    ).toEqual({
      ok: true,
      value: { nonce: NONCE },
    });
    expect(parseCctpReattest({ nonce: `0x${'cd'.repeat(32)}` }, NONCE)).toMatchObject({ ok: false });
  });

  it('an attested message is this burn only when every field the worker burned is in it, and the fee is within maxFee', () => {
    const parse = (message: string) => {
      const r = parseCctpMessages({ messages: [{ status: 'complete', message, attestation: SIG }] });
      if (!r.ok || r.value[0]?.status !== 'complete') throw new Error('not parsed');
      return r.value[0];
    };
    expect(attestedBurnMismatches(parse(attested()), made)).toEqual([]);
    expect(attestedBurnMismatches(parse(attested({ amount: 2_000_000n })), made)).toEqual(['amount']);
    expect(attestedBurnMismatches(parse(attested({ feeExecuted: 501n })), made)).toEqual(['feeExecuted']);
    expect(attestedBurnMismatches(parse(attested({ recipient: OWNER })), made)).toEqual(['mintRecipient']);
    expect(attestedBurnMismatches(parse(attested()), { ...made, owner: RECIPIENT, sourceDomain: 0 })).toEqual(
      ['sourceDomain', 'messageSender'],
    );
  });
});
