import { CCTP_DOMAIN, EVM_CHAINS, type Chain, type EvmChain, type Network } from './chains.ts';

/**
 * Circle's Cross-Chain Transfer Protocol v2 as facts (docs/sandbox.md "CCTP v2"): domains, finality thresholds,
 * the published contract addresses, and the byte layouts of MessageV2 and BurnMessageV2 with pure
 * encoders and decoders. Our own code, written from the layouts Circle's contracts declare
 * (circlefin/evm-cctp-contracts `src/messages/v2/MessageV2.sol`, `BurnMessageV2.sol`,
 * `src/messages/BurnMessage.sol`, `src/v2/FinalityThresholds.sol`).
 */

export type Hex = `0x${string}`;

/** Circle's domain ids (developers.circle.com/cctp "Supported chains and domains"), as `CCTP_DOMAIN` in chains.ts. */
export { CCTP_DOMAIN };

/** The chain of a CCTP domain id among the project's chains; undefined for a domain it has none of. */
export function chainOfCctpDomain(domain: number): Chain | undefined {
  const hit = Object.entries(CCTP_DOMAIN).find(([, d]) => d === domain);
  return hit ? (hit[0] as Chain) : undefined;
}

/** The EVM chain of a CCTP domain id (this road is EVM to EVM); undefined otherwise. */
export function evmChainOfCctpDomain(domain: number): EvmChain | undefined {
  const chain = chainOfCctpDomain(domain);
  return chain !== undefined && (EVM_CHAINS as readonly string[]).includes(chain)
    ? (chain as EvmChain)
    : undefined;
}

/** `FinalityThresholds.sol`: 2000 finalized (Standard), 1000 confirmed (Fast), 500 the least TokenMessengerV2 takes. */
export const FINALITY_THRESHOLD = { standard: 2000, fast: 1000, tokenMessengerMinimum: 500 } as const;
export type CctpSpeed = 'standard' | 'fast';

/** The `minFinalityThreshold` a burn names for each speed. */
export function finalityThresholdOf(speed: CctpSpeed): number {
  return FINALITY_THRESHOLD[speed];
}

/** MessageTransmitterV2's message version and TokenMessengerV2's message body version on every domain. */
export const CCTP_MESSAGE_VERSION = 1;
export const CCTP_BURN_MESSAGE_VERSION = 1;

/** The 65-byte ECDSA signature length of one attester (`Attestable.signatureLength`). */
export const ATTESTATION_SIGNATURE_BYTES = 65;

type CctpContracts = { readonly tokenMessenger: Hex; readonly messageTransmitter: Hex };

/**
 * Circle's published CCTP v2 addresses (developers.circle.com/cctp/evm-smart-contracts, "Mainnet
 * contract addresses" and "Testnet contract addresses"): the same TokenMessengerV2 and
 * MessageTransmitterV2 address on every EVM chain of a network (CREATE2 deployments).
 */
const MAINNET_V2: CctpContracts = {
  tokenMessenger: '0x28b5a0e9C621a5BadaA536219b3a228C8168cf5d',
  messageTransmitter: '0x81D40F21F12A8F0E3252Bccb954D722d4c464B64',
};
const TESTNET_V2: CctpContracts = {
  tokenMessenger: '0x8FE6B999Dc680CcFDD5Bf7EB0974218be2542DAA',
  messageTransmitter: '0xE737e5cEBEEBa77EFE34D4aa090756590b1CE275',
};

export const CCTP_V2_CONTRACTS: Readonly<Record<Network, Readonly<Record<EvmChain, CctpContracts>>>> = {
  mainnet: { ETH: MAINNET_V2, ARB: MAINNET_V2, BASE: MAINNET_V2, POLYGON: MAINNET_V2 },
  testnet: { ETH: TESTNET_V2, ARB: TESTNET_V2, BASE: TESTNET_V2, POLYGON: TESTNET_V2 },
};

/** A MessageV2 (`MessageV2.sol`): a 148-byte header and the body. Numbers of 4 bytes are numbers; words are hex. */
export type MessageV2 = {
  readonly version: number;
  readonly sourceDomain: number;
  readonly destinationDomain: number;
  /** bytes32: zero in the source chain's `MessageSent`; the attester assigns it. */
  readonly nonce: Hex;
  readonly sender: Hex;
  readonly recipient: Hex;
  /** bytes32: zero lets anyone call `receiveMessage`. */
  readonly destinationCaller: Hex;
  readonly minFinalityThreshold: number;
  /** Zero in `MessageSent`; the finality the attester signed at. */
  readonly finalityThresholdExecuted: number;
  readonly messageBody: Hex;
};

/** A BurnMessageV2 (`BurnMessageV2.sol` over `BurnMessage.sol`): 228 bytes and the hook data. */
export type BurnMessageV2 = {
  readonly version: number;
  readonly burnToken: Hex;
  readonly mintRecipient: Hex;
  readonly amount: bigint;
  readonly messageSender: Hex;
  readonly maxFee: bigint;
  /** Zero as burned; the attester sets the fee charged at the mint. */
  readonly feeExecuted: bigint;
  /** Zero as burned (never expires); the attester may set the destination block it expires at. */
  readonly expirationBlock: bigint;
  readonly hookData: Hex;
};

/** Byte offsets of MessageV2's fields. */
export const MESSAGE_V2_LAYOUT = {
  version: 0,
  sourceDomain: 4,
  destinationDomain: 8,
  nonce: 12,
  sender: 44,
  recipient: 76,
  destinationCaller: 108,
  minFinalityThreshold: 140,
  finalityThresholdExecuted: 144,
  messageBody: 148,
} as const;

/** Byte offsets of BurnMessageV2's fields. */
export const BURN_MESSAGE_V2_LAYOUT = {
  version: 0,
  burnToken: 4,
  mintRecipient: 36,
  amount: 68,
  messageSender: 100,
  maxFee: 132,
  feeExecuted: 164,
  expirationBlock: 196,
  hookData: 228,
} as const;

export class CctpMessageError extends Error {
  override name = 'CctpMessageError';
}

const UINT32_MAX = 0xffff_ffff;
const UINT256_MAX = (1n << 256n) - 1n;

function uint32Hex(n: number, field: string): string {
  if (!Number.isInteger(n) || n < 0 || n > UINT32_MAX)
    throw new CctpMessageError(`${field} is not a uint32: ${n}`);
  return n.toString(16).padStart(8, '0');
}

function uint256Hex(n: bigint, field: string): string {
  if (n < 0n || n > UINT256_MAX) throw new CctpMessageError(`${field} is not a uint256: ${n}`);
  return n.toString(16).padStart(64, '0');
}

function word(h: string, field: string): string {
  if (!/^0x[0-9a-fA-F]{64}$/.test(h)) throw new CctpMessageError(`${field} is not 32 bytes of hex: ${h}`);
  return h.slice(2).toLowerCase();
}

function bytesHex(h: string, field: string): string {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(h)) throw new CctpMessageError(`${field} is not hex bytes`);
  return h.slice(2).toLowerCase();
}

/** The packed bytes of a MessageV2 (`abi.encodePacked` of the fields in order). */
export function encodeMessageV2(m: MessageV2): Hex {
  return `0x${[
    uint32Hex(m.version, 'version'),
    uint32Hex(m.sourceDomain, 'sourceDomain'),
    uint32Hex(m.destinationDomain, 'destinationDomain'),
    word(m.nonce, 'nonce'),
    word(m.sender, 'sender'),
    word(m.recipient, 'recipient'),
    word(m.destinationCaller, 'destinationCaller'),
    uint32Hex(m.minFinalityThreshold, 'minFinalityThreshold'),
    uint32Hex(m.finalityThresholdExecuted, 'finalityThresholdExecuted'),
    bytesHex(m.messageBody, 'messageBody'),
  ].join('')}`;
}

/** Reads hex bytes by byte offset. */
function reader(hex: string, what: string, minBytes: number) {
  const body = bytesHex(hex, what);
  if (body.length / 2 < minBytes)
    throw new CctpMessageError(
      `${what} is ${body.length / 2} bytes, shorter than its ${minBytes}-byte header`,
    );
  const at = (offset: number, length: number) => body.slice(offset * 2, (offset + length) * 2);
  return {
    u32: (offset: number) => parseInt(at(offset, 4), 16),
    u256: (offset: number) => BigInt(`0x${at(offset, 32)}`),
    word: (offset: number): Hex => `0x${at(offset, 32)}`,
    rest: (offset: number): Hex => `0x${body.slice(offset * 2)}`,
  };
}

/** A MessageV2 from its bytes; throws CctpMessageError when shorter than the header. */
export function decodeMessageV2(hex: string): MessageV2 {
  const r = reader(hex, 'MessageV2', MESSAGE_V2_LAYOUT.messageBody);
  const L = MESSAGE_V2_LAYOUT;
  return {
    version: r.u32(L.version),
    sourceDomain: r.u32(L.sourceDomain),
    destinationDomain: r.u32(L.destinationDomain),
    nonce: r.word(L.nonce),
    sender: r.word(L.sender),
    recipient: r.word(L.recipient),
    destinationCaller: r.word(L.destinationCaller),
    minFinalityThreshold: r.u32(L.minFinalityThreshold),
    finalityThresholdExecuted: r.u32(L.finalityThresholdExecuted),
    messageBody: r.rest(L.messageBody),
  };
}

/** The packed bytes of a BurnMessageV2. */
export function encodeBurnMessageV2(b: BurnMessageV2): Hex {
  return `0x${[
    uint32Hex(b.version, 'version'),
    word(b.burnToken, 'burnToken'),
    word(b.mintRecipient, 'mintRecipient'),
    uint256Hex(b.amount, 'amount'),
    word(b.messageSender, 'messageSender'),
    uint256Hex(b.maxFee, 'maxFee'),
    uint256Hex(b.feeExecuted, 'feeExecuted'),
    uint256Hex(b.expirationBlock, 'expirationBlock'),
    bytesHex(b.hookData, 'hookData'),
  ].join('')}`;
}

/** A BurnMessageV2 from its bytes; throws CctpMessageError when shorter than 228 bytes. */
export function decodeBurnMessageV2(hex: string): BurnMessageV2 {
  const r = reader(hex, 'BurnMessageV2', BURN_MESSAGE_V2_LAYOUT.hookData);
  const L = BURN_MESSAGE_V2_LAYOUT;
  return {
    version: r.u32(L.version),
    burnToken: r.word(L.burnToken),
    mintRecipient: r.word(L.mintRecipient),
    amount: r.u256(L.amount),
    messageSender: r.word(L.messageSender),
    maxFee: r.u256(L.maxFee),
    feeExecuted: r.u256(L.feeExecuted),
    expirationBlock: r.u256(L.expirationBlock),
    hookData: r.rest(L.hookData),
  };
}

export const ZERO_BYTES32: Hex = `0x${'0'.repeat(64)}`;

/** An EVM address as bytes32 (12 zero bytes, then the address), as `AddressUtils.toBytes32`. */
export function addressToBytes32(address: string): Hex {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new CctpMessageError(`not an EVM address: ${address}`);
  return `0x${'0'.repeat(24)}${address.slice(2).toLowerCase()}`;
}

/** The EVM address in a bytes32 word (its low 20 bytes), lower case. */
export function bytes32ToAddress(word32: string): Hex {
  return `0x${word(word32, 'bytes32 address').slice(24)}`;
}

/** The fee in base units for `bps` basis points of `amount`, rounded up (0 bps is free). */
export function cctpFeeFor(amount: bigint, bps: number): bigint {
  if (bps <= 0) return 0n;
  const scaled = amount * BigInt(Math.round(bps * 100));
  return (scaled + 999_999n) / 1_000_000n;
}
