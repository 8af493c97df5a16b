import type { Refusal } from '../chain-types.ts';
import type { ParsedPermit } from '../permit-check.ts';

/**
 * Names the cause of a reverted `permit(owner, relayer, amount, deadline, v, r, s)` simulation as
 * the service's refusal code. The contract is the authority (it reverted); this only says why, from
 * its error and its state: ERC-2612 signatures carry no nonce or spender field of their own, so an
 * `ERC2612InvalidSigner` means the owner did not sign exactly (relayer, amount, current nonce,
 * deadline) — which of those differs is read from the permit against the contract's `nonces(owner)`.
 */
export function diagnosePermitRevert(p: {
  /** The decoded custom error's name, when the revert carried one of the token's errors. */
  readonly error: string | undefined;
  readonly message: string;
  readonly permit: ParsedPermit;
  readonly amount: bigint;
  readonly spender: string;
  /** The contract's `nonces(owner)` now. */
  readonly nonce: bigint;
}): Refusal {
  const { permit } = p;
  if (p.error === 'ERC2612ExpiredSignature')
    return {
      code: 'permit_expired',
      message: 'permit.deadline has passed (the token reverted ERC2612ExpiredSignature)',
    };
  if (p.error === 'ERC2612InvalidSigner' || p.error?.startsWith('ECDSAInvalidSignature')) {
    const why = 'the token reverted: the signature does not recover to permit.owner for';
    if (permit.spender.toLowerCase() !== p.spender.toLowerCase())
      return {
        code: 'permit_spender_mismatch',
        message: `permit.spender must be ${p.spender} (${why} this spender)`,
      };
    if (permit.value !== p.amount)
      return {
        code: 'permit_value_mismatch',
        message: `permit.value is not the amount in base units (${why} this amount)`,
      };
    if (permit.nonce < p.nonce)
      return {
        code: 'permit_nonce_used',
        message: `permit.nonce ${permit.nonce} was already used (nonces(owner) is ${p.nonce})`,
      };
    if (permit.nonce > p.nonce)
      return {
        code: 'permit_nonce_invalid',
        message: `permit.nonce ${permit.nonce} is not the owner’s current nonce ${p.nonce}`,
      };
    return {
      code: 'permit_invalid_signature',
      message: 'the permit signature does not recover to permit.owner',
    };
  }
  return { code: 'permit_reverted', message: `the permit reverted: ${p.message.slice(0, 200)}` };
}
