import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

/**
 * The public EVM address (EIP-55 checksummed) of a private key, for the layers that may not
 * import viem themselves (ops, cli): only the address leaves this function, never the key.
 */
export function evmAddressOfKey(privateKey: string): string {
  return privateKeyToAccount(privateKey as Hex).address;
}
