import { EVM_CHAINS, type Chain } from '../domain/chains.ts';
import type { Config } from './config.ts';
import { spenderFor } from './load-config.ts';

/**
 * The source chains whose queues this process can work (one BullMQ queue per source chain): an EVM
 * chain when the EVM key and a spender for that chain are configured, SOLANA when the Solana key is.
 * Rows of any other source stay `queued` until a worker holding their key takes them, so keys can
 * live on different machines and a missing key never turns into a failed payment.
 */
export function workerSourceChains(config: Config): readonly Chain[] {
  const chains: Chain[] = [];
  if (config.evmPrivateKeys.length > 0) {
    for (const chain of EVM_CHAINS) if (spenderFor(config, chain) !== undefined) chains.push(chain);
  }
  if (config.solanaSecretKey) chains.push('SOLANA');
  return Object.freeze(chains);
}
