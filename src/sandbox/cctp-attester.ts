import { encodePacked, keccak256, type Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import {
  bytes32ToAddress,
  cctpFeeFor,
  decodeBurnMessageV2,
  decodeMessageV2,
  encodeBurnMessageV2,
  encodeMessageV2,
  FINALITY_THRESHOLD,
  type BurnMessageV2,
  type MessageV2,
} from '../domain/cctp.ts';
import { tryParseUsdc } from '../domain/money.ts';
import type { SandboxConfig } from './sandbox-config.ts';

/**
 * The sandbox's attester: what Circle's attestation service decides about a burn (the finality it
 * signs at, the fee, the expiration) and the signature, 65 bytes over keccak256(message) with the
 * attester's key (docs/sandbox.md "CCTP v2"). Pure but for the signature.
 */

/** What a burn will be attested as, or why it will not be. */
export type AttestationPlan =
  | { readonly ok: true; readonly finality: number; readonly fee: bigint; readonly fast: boolean }
  | { readonly ok: false; readonly delayReason: 'insufficient_fee' };

/**
 * Fast when the burn asked for it (threshold ≤ 1000), its `maxFee` covers the Fast fee and the Fast
 * allowance covers its amount; otherwise Standard when `maxFee` covers the Standard fee (as Circle
 * attests an under-paid Fast burn at finality); otherwise never.
 */
export function planAttestation(
  m: MessageV2,
  b: BurnMessageV2,
  c: SandboxConfig,
  fastLeft: bigint,
): AttestationPlan {
  const fastFee = cctpFeeFor(b.amount, c.cctpFastFeeBps);
  if (m.minFinalityThreshold <= FINALITY_THRESHOLD.fast && fastFee <= b.maxFee && b.amount <= fastLeft)
    return { ok: true, finality: FINALITY_THRESHOLD.fast, fee: fastFee, fast: true };
  const standardFee = cctpFeeFor(b.amount, c.cctpStandardFeeBps);
  if (standardFee <= b.maxFee)
    return { ok: true, finality: FINALITY_THRESHOLD.standard, fee: standardFee, fast: false };
  return { ok: false, delayReason: 'insufficient_fee' };
}

/** The sandbox's nonce for a message: unique per (source domain, transaction, log), the same on every ask. */
export function sandboxCctpNonce(sourceDomain: number, txHash: Hex, logIndex: number): Hex {
  return keccak256(encodePacked(['uint32', 'bytes32', 'uint32'], [sourceDomain, txHash, logIndex]));
}

/** The emitted message with what the attester fills in: nonce, finality executed, fee executed, expiration block. */
export function attestedMessage(
  sent: Hex,
  fill: { nonce: Hex; finality: number; fee: bigint; expirationBlock: bigint },
): Hex {
  const m = decodeMessageV2(sent);
  const b = decodeBurnMessageV2(m.messageBody);
  const body = encodeBurnMessageV2({ ...b, feeExecuted: fill.fee, expirationBlock: fill.expirationBlock });
  return encodeMessageV2({
    ...m,
    nonce: fill.nonce,
    finalityThresholdExecuted: fill.finality,
    messageBody: body,
  });
}

/** One attester's signature: 65 bytes (r, s, v) over keccak256(message), no prefix (Circle's `Attestable`). */
export async function signAttestation(attester: PrivateKeyAccount, message: Hex): Promise<Hex> {
  return await attester.sign({ hash: keccak256(message) });
}

/** The Fast allowance left: the configured allowance less what Fast attestations used. */
export function fastAllowanceLeft(c: SandboxConfig, used: bigint): bigint {
  const r = tryParseUsdc(c.cctpFastAllowance, { allowZero: true });
  const total = r.ok ? r.value : 0n;
  return total > used ? total - used : 0n;
}

/** Circle's `decodedMessage` of a message: numbers as decimal strings, EVM addresses as 20-byte hex. */
export function decodedMessage(message: Hex): Record<string, unknown> {
  const m = decodeMessageV2(message);
  const b = decodeBurnMessageV2(m.messageBody);
  return {
    sourceDomain: String(m.sourceDomain),
    destinationDomain: String(m.destinationDomain),
    nonce: m.nonce,
    sender: bytes32ToAddress(m.sender),
    recipient: bytes32ToAddress(m.recipient),
    destinationCaller: bytes32ToAddress(m.destinationCaller),
    minFinalityThreshold: String(m.minFinalityThreshold),
    finalityThresholdExecuted: String(m.finalityThresholdExecuted),
    messageBody: m.messageBody,
    decodedMessageBody: {
      burnToken: bytes32ToAddress(b.burnToken),
      mintRecipient: bytes32ToAddress(b.mintRecipient),
      amount: b.amount.toString(),
      messageSender: bytes32ToAddress(b.messageSender),
      maxFee: b.maxFee.toString(),
      feeExecuted: b.feeExecuted.toString(),
      expirationBlock: b.expirationBlock.toString(),
      hookData: b.hookData === '0x' ? null : b.hookData,
    },
  };
}
