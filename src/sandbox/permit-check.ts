import { parseSignature, serializeSignature, type Hex } from 'viem';
import { USDC_EVM, type EvmChain, type Network } from '../domain/chains.ts';

/**
 * The ERC-2612 Permit type, as USDC (FiatTokenV2) defines it. Written out here rather than imported
 * from src/signing: the test helpers sign with it independently of the code they test.
 */
export const PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

/** USDC's EIP-712 domain on `chain` (name, version, chain id, contract), as the sandbox's RPC reports it. */
export function usdcDomain(network: Network, chain: EvmChain) {
  const d = USDC_EVM[network][chain];
  return {
    name: d.eip712Name,
    version: d.eip712Version,
    chainId: d.chainId,
    verifyingContract: d.usdc,
  } as const;
}

export type ParsedPermit = {
  owner: `0x${string}`;
  spender: `0x${string}`;
  value: bigint;
  nonce: bigint;
  deadline: bigint;
  signature: Hex;
};

type PermitProblem = { code: string; message: string };

const UINT = /^[0-9]{1,78}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const WORD = /^0x[0-9a-fA-F]{64}$/;

function uint(v: unknown): bigint | undefined {
  if (typeof v === 'string' && UINT.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return undefined;
}

/**
 * Reads the permit object of docs/transfer-service.md §2.4. `signature` (65-byte r‖s‖v) and/or `v, r, s` are
 * accepted; when both are given they must agree.
 */
export function readPermit(v: unknown): ParsedPermit | PermitProblem {
  const bad = (message: string): PermitProblem => ({ code: 'invalid_permit', message });
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad('permit must be an object');
  const p = v as Record<string, unknown>;
  const owner = p['owner'];
  const spender = p['spender'];
  if (typeof owner !== 'string' || !ADDRESS.test(owner)) return bad('permit.owner must be an address');
  if (typeof spender !== 'string' || !ADDRESS.test(spender)) return bad('permit.spender must be an address');
  const value = uint(p['value']);
  const nonce = uint(p['nonce']);
  const deadline = uint(p['deadline']);
  if (value === undefined) return bad('permit.value must be a decimal integer string');
  if (nonce === undefined) return bad('permit.nonce must be a decimal integer string');
  if (deadline === undefined) return bad('permit.deadline must be a decimal integer string');

  let fromParts: Hex | undefined;
  const pv = p['v'];
  const pr = p['r'];
  const ps = p['s'];
  if (pv !== undefined || pr !== undefined || ps !== undefined) {
    if (typeof pv !== 'number' || ![0, 1, 27, 28].includes(pv)) return bad('permit.v must be 27 or 28');
    if (typeof pr !== 'string' || !WORD.test(pr)) return bad('permit.r must be 32 bytes of hex');
    if (typeof ps !== 'string' || !WORD.test(ps)) return bad('permit.s must be 32 bytes of hex');
    fromParts = serializeSignature({ r: pr as Hex, s: ps as Hex, v: BigInt(pv < 27 ? pv + 27 : pv) });
  }
  let signature: Hex | undefined;
  const ps65 = p['signature'];
  if (ps65 !== undefined) {
    if (typeof ps65 !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(ps65))
      return bad('permit.signature must be 65 bytes of hex (r‖s‖v)');
    signature = ps65.toLowerCase() as Hex;
    try {
      parseSignature(signature);
    } catch {
      return bad('permit.signature is not a valid signature');
    }
  }
  if (signature && fromParts && signature !== fromParts.toLowerCase())
    return { code: 'permit_signature_mismatch', message: 'permit.signature and v, r, s disagree' };
  const sig = signature ?? fromParts;
  if (!sig) return bad('permit needs signature or v, r, s');
  return {
    owner: owner as `0x${string}`,
    spender: spender as `0x${string}`,
    value,
    nonce,
    deadline,
    signature: sig,
  };
}
