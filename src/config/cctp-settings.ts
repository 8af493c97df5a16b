import { CCTP_V2_CONTRACTS } from '../domain/cctp.ts';
import { EVM_CHAINS, USDC_EVM, type EvmChain, type Network } from '../domain/chains.ts';
import { isTransferRoad, TRANSFER_ROADS, type TransferRoad } from '../domain/roads.ts';
import { DEFAULTS } from './defaults.ts';
import type { EnvReader, Problem } from './env-reader.ts';

/*
 * The second road's settings (docs/cctp.md): which road a batch takes when it names none, Circle's
 * attestation API, the CCTP v2 contracts and USDC where they are not Circle's published addresses,
 * and the cap on the gas price the worker pays for its own transactions.
 */

export type CctpSettings = {
  /** TRANSFER_VIA: the road of a batch that names none. */
  readonly transferVia: TransferRoad;
  /** CCTP_API_URL, without a trailing '/'; by default Circle's for NETWORK. */
  readonly cctpApiUrl: string;
  /** CCTP_TOKEN_MESSENGER_<CHAIN>: TokenMessengerV2 where it is not Circle's published one. */
  readonly cctpTokenMessenger: Readonly<Partial<Record<EvmChain, string>>>;
  /** CCTP_MESSAGE_TRANSMITTER_<CHAIN>: MessageTransmitterV2 where it is not Circle's published one. */
  readonly cctpMessageTransmitter: Readonly<Partial<Record<EvmChain, string>>>;
  /** USDC_ADDRESS_<CHAIN>: USDC where it is not Circle's published one. */
  readonly usdcAddress: Readonly<Partial<Record<EvmChain, string>>>;
  /** MAX_GAS_GWEI_<CHAIN>, in wei: the most a gas unit of the worker's own transactions may cost. */
  readonly maxGasWei: Readonly<Partial<Record<EvmChain, bigint>>>;
};

/** Circle's attestation API per NETWORK (Circle's CCTP documentation). */
export const CIRCLE_ATTESTATION_API: Readonly<Record<Network, string>> = {
  mainnet: 'https://iris-api.circle.com',
  testnet: 'https://iris-api-sandbox.circle.com',
};

const GWEI_DECIMALS = 9;
/** No chain asks for more than this per gas unit (a typo of a few zeros is caught). */
const MAX_GWEI = 1_000_000n;
export const GWEI_FORM = `must be a price in gwei above 0 and at most ${MAX_GWEI} (up to ${GWEI_DECIMALS} decimals, e.g. 50 or 0.05)`;

/** A decimal price in gwei as wei; undefined when it is not one (0, negative, too precise, too high). */
export function parseGwei(text: string): bigint | undefined {
  const m = /^([0-9]{1,7})(?:\.([0-9]{1,9}))?$/.exec(text);
  if (!m) return undefined;
  const wei = BigInt(m[1] as string) * 10n ** 9n + BigInt((m[2] ?? '').padEnd(GWEI_DECIMALS, '0'));
  return wei > 0n && wei <= MAX_GWEI * 10n ** 9n ? wei : undefined;
}

function readTransferVia(r: EnvReader, problem: Problem): TransferRoad {
  const text = (r.str('TRANSFER_VIA') ?? DEFAULTS.TRANSFER_VIA).toLowerCase();
  if (isTransferRoad(text)) return text;
  problem('TRANSFER_VIA', `must be one of ${TRANSFER_ROADS.join(', ')}`);
  return DEFAULTS.TRANSFER_VIA;
}

/** One address setting per EVM chain (`<name>_<CHAIN>`), each checked and named when wrong. */
function readAddressPerChain(r: EnvReader, name: string): Readonly<Partial<Record<EvmChain, string>>> {
  const out: Partial<Record<EvmChain, string>> = {};
  for (const chain of EVM_CHAINS) {
    const a = r.address(`${name}_${chain}`);
    if (a) out[chain] = a;
  }
  return Object.freeze(out);
}

function readMaxGas(r: EnvReader, problem: Problem): Readonly<Partial<Record<EvmChain, bigint>>> {
  const out: Partial<Record<EvmChain, bigint>> = {};
  for (const chain of EVM_CHAINS) {
    const name = `MAX_GAS_GWEI_${chain}`;
    const text = r.str(name);
    if (text === undefined) continue;
    const wei = parseGwei(text);
    if (wei === undefined) problem(name, `${GWEI_FORM} (got "${text.slice(0, 20)}")`);
    else out[chain] = wei;
  }
  return Object.freeze(out);
}

/** The settings above; each malformed one is a problem naming its variable. */
export function readCctpSettings(r: EnvReader, problem: Problem, network: Network): CctpSettings {
  return {
    transferVia: readTransferVia(r, problem),
    cctpApiUrl: r.url('CCTP_API_URL', ['http:', 'https:']) ?? CIRCLE_ATTESTATION_API[network],
    cctpTokenMessenger: readAddressPerChain(r, 'CCTP_TOKEN_MESSENGER'),
    cctpMessageTransmitter: readAddressPerChain(r, 'CCTP_MESSAGE_TRANSMITTER'),
    usdcAddress: readAddressPerChain(r, 'USDC_ADDRESS'),
    maxGasWei: readMaxGas(r, problem),
  };
}

/** The CCTP v2 contracts and USDC the worker uses on a chain. */
export type CctpAddresses = {
  readonly tokenMessenger: string;
  readonly messageTransmitter: string;
  readonly usdc: string;
};

/**
 * The contracts on `chain`: each setting where it is given (CCTP_TOKEN_MESSENGER_<CHAIN>,
 * CCTP_MESSAGE_TRANSMITTER_<CHAIN>, USDC_ADDRESS_<CHAIN>), Circle's published address for NETWORK
 * where it is not.
 */
export function cctpAddressesOf(
  config: Pick<
    CctpSettings & { network: Network },
    'network' | 'cctpTokenMessenger' | 'cctpMessageTransmitter' | 'usdcAddress'
  >,
  chain: EvmChain,
): CctpAddresses {
  const published = CCTP_V2_CONTRACTS[config.network][chain];
  return {
    tokenMessenger: config.cctpTokenMessenger[chain] ?? published.tokenMessenger,
    messageTransmitter: config.cctpMessageTransmitter[chain] ?? published.messageTransmitter,
    usdc: config.usdcAddress[chain] ?? USDC_EVM[config.network][chain].usdc,
  };
}
