import { describe, expect, it } from 'vitest';
import {
  addressToBytes32,
  bytes32ToAddress,
  cctpFeeFor,
  CctpMessageError,
  decodeBurnMessageV2,
  decodeMessageV2,
  encodeBurnMessageV2,
  encodeMessageV2,
  evmChainOfCctpDomain,
  type BurnMessageV2,
  type MessageV2,
} from '../../src/domain/cctp.ts';

// A burn of 1.5 USDC from Base (domain 6) to Arbitrum (3), Fast, maxFee 500, as attested: built here
// field by field from MessageV2.sol / BurnMessageV2.sol's offsets, by hand, not by the encoder.
const pad = (hex: string, bytes: number) => hex.padStart(bytes * 2, '0');
const USDC = '036cbd53842c5426634e7929541ec2318f3dcf7e';
const RECIPIENT = '000000000000000000000000000000000000dead';
const SENDER = '1111111111111111111111111111111111111111';
const MESSENGER = '8fe6b999dc680ccfdd5bf7eb0974218be2542daa';
const NONCE = 'ab'.repeat(32);
const BODY_HEX = [
  pad('1', 4), // version
  pad(USDC, 32), // burnToken
  pad(RECIPIENT, 32), // mintRecipient
  pad((1_500_000).toString(16), 32), // amount
  pad(SENDER, 32), // messageSender
  pad((500).toString(16), 32), // maxFee
  pad((150).toString(16), 32), // feeExecuted
  pad((12_345).toString(16), 32), // expirationBlock
].join('');
const MESSAGE_HEX = [
  pad('1', 4), // version
  pad('6', 4), // sourceDomain
  pad('3', 4), // destinationDomain
  NONCE,
  pad(MESSENGER, 32), // sender
  pad(MESSENGER, 32), // recipient
  pad('0', 32), // destinationCaller
  pad((1000).toString(16), 4), // minFinalityThreshold
  pad((1000).toString(16), 4), // finalityThresholdExecuted
  BODY_HEX,
].join('');

const body: BurnMessageV2 = {
  version: 1,
  burnToken: `0x${pad(USDC, 32)}`,
  mintRecipient: `0x${pad(RECIPIENT, 32)}`,
  amount: 1_500_000n,
  messageSender: `0x${pad(SENDER, 32)}`,
  maxFee: 500n,
  feeExecuted: 150n,
  expirationBlock: 12_345n,
  hookData: '0x',
};
const message: MessageV2 = {
  version: 1,
  sourceDomain: 6,
  destinationDomain: 3,
  nonce: `0x${NONCE}`,
  sender: `0x${pad(MESSENGER, 32)}`,
  recipient: `0x${pad(MESSENGER, 32)}`,
  destinationCaller: `0x${'0'.repeat(64)}`,
  minFinalityThreshold: 1000,
  finalityThresholdExecuted: 1000,
  messageBody: `0x${BODY_HEX}`,
};

describe('CCTP v2 messages (Circle layout)', () => {
  it('encodes a MessageV2 wrapping a BurnMessageV2 byte for byte as the hand-built vector', () => {
    expect(MESSAGE_HEX.length / 2).toBe(148 + 228);
    expect(encodeBurnMessageV2(body)).toBe(`0x${BODY_HEX}`);
    expect(encodeMessageV2(message)).toBe(`0x${MESSAGE_HEX}`);
  });

  it('decodes the vector back into its fields', () => {
    expect(decodeMessageV2(`0x${MESSAGE_HEX}`)).toEqual(message);
    expect(decodeBurnMessageV2(`0x${BODY_HEX}`)).toEqual(body);
  });

  it('keeps hook data after byte 228', () => {
    const withHook = encodeBurnMessageV2({ ...body, hookData: '0xdeadbeef' });
    expect(withHook.endsWith('deadbeef')).toBe(true);
    expect(decodeBurnMessageV2(withHook).hookData).toBe('0xdeadbeef');
  });

  it('refuses a message shorter than its header and a field out of range', () => {
    expect(() => decodeMessageV2(`0x${MESSAGE_HEX.slice(0, 290)}`)).toThrow(CctpMessageError);
    expect(() => decodeBurnMessageV2(`0x${BODY_HEX.slice(0, 400)}`)).toThrow(
      /shorter than its 228-byte header/,
    );
    expect(() => encodeMessageV2({ ...message, sourceDomain: 2 ** 32 })).toThrow(
      /sourceDomain is not a uint32/,
    );
    expect(() => encodeBurnMessageV2({ ...body, amount: -1n })).toThrow(/amount is not a uint256/);
  });

  it('turns addresses into bytes32 words and back', () => {
    const word = addressToBytes32('0x000000000000000000000000000000000000dEaD');
    expect(word).toBe(`0x${pad(RECIPIENT, 32)}`);
    expect(bytes32ToAddress(word)).toBe(`0x${RECIPIENT}`);
  });

  it('maps domains to the project’s EVM chains and rounds a basis-point fee up', () => {
    expect([0, 3, 6, 7].map(evmChainOfCctpDomain)).toEqual(['ETH', 'ARB', 'BASE', 'POLYGON']);
    expect(evmChainOfCctpDomain(5)).toBeUndefined(); // SOLANA: not on this road
    expect(cctpFeeFor(1_500_000n, 1)).toBe(150n);
    expect(cctpFeeFor(1n, 1)).toBe(1n);
    expect(cctpFeeFor(1_500_000n, 0)).toBe(0n);
  });
});
