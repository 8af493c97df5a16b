import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { SOLANA_USDC_MINT } from '../domain/chains.ts';
import { usdcTokenAccount } from '../signing/solana/solana-signer.ts';
import { readPublishedAddresses } from '../store/published-addresses.ts';

/*
 * The treasury's own public addresses, for every process that does not sign (docs/keys.md
 * ): from the configuration (EVM_OWNER_ADDRESSES and SOLANA_ADDRESS, or the keystores'
 * `address` fields: src/config/public-addresses.ts), else what the running workers last published
 * to Redis (src/store/published-addresses.ts). No key is read to know them.
 */

/** Where a family's addresses came from: the configuration, the workers' publication, or nowhere. */
export type AddressOrigin = 'configuration' | 'workers' | null;

/** The treasury's own addresses: EVM owners in configured order, the Solana wallet and its USDC account. */
export type TreasuryAddresses = {
  readonly evmOwners: readonly string[];
  readonly solana: { readonly address: string; readonly usdcAccount: string } | null;
  readonly from: { readonly evm: AddressOrigin; readonly solana: AddressOrigin };
};

export type AddressConfig = Pick<Config, 'evmOwnerAddresses' | 'solanaAddress' | 'network'>;

/**
 * The treasury's addresses: each family from the configuration when it names them, else as the
 * workers published them (when `redis` is given; a Redis that fails to answer throws).
 */
export async function treasuryAddresses(deps: {
  readonly config: AddressConfig;
  readonly redis?: Redis | undefined;
  readonly prefix: string;
}): Promise<TreasuryAddresses> {
  const { config } = deps;
  const configured = { evm: config.evmOwnerAddresses.length > 0, solana: config.solanaAddress !== undefined };
  const published =
    deps.redis && (!configured.evm || !configured.solana)
      ? await readPublishedAddresses(deps.redis, deps.prefix)
      : undefined;
  const evmOwners = configured.evm ? config.evmOwnerAddresses : (published?.evm ?? []);
  const solanaAddress = configured.solana ? config.solanaAddress : published?.solana;
  const origin = (given: boolean, found: boolean): AddressOrigin =>
    given ? 'configuration' : found ? 'workers' : null;
  return {
    evmOwners,
    solana:
      solanaAddress === undefined
        ? null
        : {
            address: solanaAddress,
            usdcAccount: await usdcTokenAccount(solanaAddress, SOLANA_USDC_MINT[config.network]),
          },
    from: {
      evm: origin(configured.evm, evmOwners.length > 0),
      solana: origin(configured.solana, solanaAddress !== undefined),
    },
  };
}

/** What to say when no address of a family is known: where addresses come from. */
export const NO_ADDRESS_HINT =
  'set EVM_OWNER_ADDRESSES / SOLANA_ADDRESS, or start a worker (it publishes its addresses to Redis)';
