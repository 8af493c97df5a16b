/*
 * USDC's `isBlacklisted(address)` of several addresses in one `eth_call` (docs/promises.md, promise
 * 6): the call creates no contract, it runs the code below as a contract's constructor would, on the
 * node, at the block asked for, and the node answers what that code returns. A provider bills one
 * call where a JSON-RPC batch of one `eth_call` per address bills each, and the node runs one call.
 *
 * The code was written for this project (assembled by hand; the listing is its source). It takes its
 * arguments from its own end: USDC's address, then each address asked about, one 32-byte word each.
 * For each address it calls USDC's `isBlacklisted(address)` with STATICCALL (nothing can be written)
 * and keeps the 32-byte answer; it returns the answers in the addresses' order. A call that fails,
 * or answers anything but 32 bytes, reverts the whole read (the caller then reads each on its own).
 *
 *   00 PUSH1 0x4f            the code's length: where the arguments begin
 *   02 DUP1 CODESIZE SUB     the arguments' length
 *   05 DUP1 SWAP2
 *   07 PUSH1 0x80 CODECOPY   memory[0x80..]: USDC, a1, a2, …
 *   0a PUSH1 0x80 ADD        end of the arguments in memory
 *   0d PUSH4 0xfe575a87 PUSH1 0xe0 SHL PUSH1 0x00 MSTORE
 *                            memory[0..4]: isBlacklisted(address)'s selector
 *   18 PUSH1 0xa0            p: the first address
 *   1a JUMPDEST              loop: while p < end
 *   1b DUP2 DUP2 LT ISZERO PUSH1 0x46 JUMPI
 *   22 DUP1 MLOAD PUSH1 0x04 MSTORE
 *                            memory[4..36]: the address at p
 *   27 PUSH1 0x20 DUP2 PUSH1 0x24 PUSH1 0x00 PUSH1 0x80 MLOAD GAS STATICCALL
 *                            USDC.isBlacklisted(address), its 32-byte answer written over the address at p
 *   33 RETURNDATASIZE PUSH1 0x20 EQ AND PUSH1 0x3f JUMPI
 *   3b PUSH1 0x00 DUP1 REVERT    the call failed or answered not one word
 *   3f JUMPDEST PUSH1 0x20 ADD PUSH1 0x1a JUMP
 *                            p += 32
 *   46 JUMPDEST POP PUSH1 0xa0 SWAP1 SUB PUSH1 0xa0 RETURN
 *                            return memory[0xa0..end]: one answer per address
 */
const READ_ALL_CODE =
  '604f803803809160803960800163fe575a8760e01b60005260a05b818110156046578051600452602081602460006080515afa3d60201416603f57600080fd5b602001601a565b5060a0900360a0f3';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const FALSE_WORD = '0'.repeat(64);
const TRUE_WORD = `${'0'.repeat(63)}1`;

/** An address as one ABI word. */
const word = (address: string): string => address.slice(2).toLowerCase().padStart(64, '0');

/**
 * The `eth_call` transaction object that reads `isBlacklisted` of every address at once; undefined
 * when one of them (or USDC's) is not a 20-byte address (each is then read, and refused, alone).
 */
export function blacklistedAllCall(
  usdc: string,
  addresses: readonly string[],
): { readonly data: string } | undefined {
  if (!ADDRESS.test(usdc) || !addresses.every((a) => ADDRESS.test(a))) return undefined;
  return { data: `0x${READ_ALL_CODE}${word(usdc)}${addresses.map(word).join('')}` };
}

/**
 * The answers of `blacklistedAllCall`'s read, one per address in their order; undefined when the
 * result is not exactly one ABI `bool` word per address (each is then read alone).
 */
export function blacklistedAllAnswer(result: unknown, count: number): boolean[] | undefined {
  if (typeof result !== 'string' || result.length !== 2 + 64 * count || !result.startsWith('0x'))
    return undefined;
  const answers: boolean[] = [];
  for (let i = 0; i < count; i++) {
    const w = result.slice(2 + 64 * i, 66 + 64 * i);
    if (w === TRUE_WORD) answers.push(true);
    else if (w === FALSE_WORD) answers.push(false);
    else return undefined;
  }
  return answers;
}
