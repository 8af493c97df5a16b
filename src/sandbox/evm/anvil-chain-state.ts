import type { Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import type { EvmChain, Network } from '../../domain/chains.ts';
import type { SandboxConfig } from '../sandbox-config.ts';
import type { AnvilProcess } from './anvil-process.ts';
import type { BlockClock } from './block-clock.ts';

export type AnvilChainDeps = {
  readonly chain: EvmChain;
  readonly network: Network;
  /** The relayer: the permits' spender and the token's minter (a random key per run). */
  readonly relayer: PrivateKeyAccount;
  /** Where `transferFrom` moves the owner's USDC (the service's deposit address). */
  readonly deposit: `0x${string}`;
  /** The CCTP attester every chain's MessageTransmitterV2 trusts (its key stays in the sandbox). */
  readonly attester: `0x${string}`;
  /** Where TokenMessengerV2 mints the fee of a CCTP mint. */
  readonly cctpFeeRecipient: `0x${string}`;
  readonly config: () => SandboxConfig;
  /** Called once the chain has met (funded) an address: the sandbox gives it gas on the other chains. */
  readonly onMet?: (address: string) => Promise<void>;
};

/** The state of one anvil chain: what the functions below share. */
export type AnvilChainState = {
  readonly deps: AnvilChainDeps;
  readonly node: AnvilProcess;
  readonly usdc: `0x${string}`;
  readonly clock: BlockClock;
  /** Addresses met (lower case): funded once, or set by a drill, or paid by the service. */
  met: Set<string>;
  relayerNonce: number;
  baseline: Hex;
  baselineBlock: bigint;
  /** The tail of the chain's serial queue: every change to the chain runs one at a time. */
  tail: Promise<unknown>;
};
