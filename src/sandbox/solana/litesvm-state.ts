import type { Address, KeyPairSigner } from '@solana/kit';
import type { LiteSVM } from 'litesvm';
import type { Network } from '../../domain/chains.ts';
import type { SandboxConfig } from '../sandbox-config.ts';

export type LiteSvmChainDeps = {
  readonly network: Network;
  /** 32-byte seed of the service's fee payer (also the USDC mint authority, as Circle's minter is). */
  readonly feePayerSeed: Uint8Array;
  readonly config: () => SandboxConfig;
};

export type LiteSvmState = {
  readonly deps: LiteSvmChainDeps;
  readonly feePayer: KeyPairSigner;
  readonly mint: Address;
  readonly deposit: Address;
  svm: LiteSVM;
  /** Owners met (funded, or being funded): a later meet waits for that funding to land. */
  met: Map<string, Promise<void>>;
  /** Makes each of the sandbox's own transactions unique (LiteSVM refuses an identical one). */
  counter: number;
};
