import type { Chain, EvmChain } from '../domain/chains.ts';

/*
 * USDC's own controls, read on chain before anything is signed for a transfer (docs/promises.md,
 * promise 6): pure decisions, from what the chains showed (onchain-screening.ts reads them) to what
 * the run does. Tested without a chain (test/unit/pipeline-onchain-controls.test.ts).
 *
 * - An EVM recipient blacklisted by USDC on its destination chain cannot receive: the mint there
 *   would revert after the burn on the source chain, the money stuck. The transfer is `rejected`,
 *   `recipient_blacklisted` (final: nothing was signed, nothing is ever paid for it).
 * - A Solana recipient whose USDC associated token account is frozen, the same: `recipient_frozen`.
 *   An account that does not exist yet is fine (the payment creates it).
 * - An EVM owner blacklisted on the source chain cannot sign a permit that executes: another owner
 *   pays; with none left (or when the transfer already belongs to that owner), it `failed`,
 *   `owner_blacklisted` — its row may be paid again later by `retry` once an owner can.
 */

/** The `check` label of `usdc_batch_screening_refusals_total` (`list` is the sanctions lists'). */
export type OnchainCheck = 'blacklist' | 'owner_blacklist' | 'frozen';

export type OnchainRefusal = {
  readonly state: 'rejected' | 'failed';
  readonly code: 'recipient_blacklisted' | 'recipient_frozen' | 'owner_blacklisted';
  readonly check: OnchainCheck;
  /** The chain that refused (the audit's `who`). */
  readonly chain: Chain;
  readonly address: string;
  readonly message: string;
};

/** What the destination chain showed of the recipient; `unscreened`: no RPC for that chain. */
export type RecipientFacts =
  | {
      readonly kind: 'evm';
      readonly chain: EvmChain;
      readonly recipient: string;
      readonly blacklisted: boolean;
    }
  | {
      readonly kind: 'solana';
      readonly recipient: string;
      readonly account: string;
      readonly state: 'absent' | 'open' | 'frozen';
    }
  | { readonly kind: 'unscreened' };

/** The recipient's verdict: a refusal, or undefined (it may be paid). */
export function decideRecipient(facts: RecipientFacts): OnchainRefusal | undefined {
  if (facts.kind === 'evm' && facts.blacklisted) {
    return {
      state: 'rejected',
      code: 'recipient_blacklisted',
      check: 'blacklist',
      chain: facts.chain,
      address: facts.recipient,
      message: `USDC on ${facts.chain} has blacklisted ${facts.recipient} (isBlacklisted): it cannot receive USDC there, so nothing was signed`,
    };
  }
  if (facts.kind === 'solana' && facts.state === 'frozen') {
    return {
      state: 'rejected',
      code: 'recipient_frozen',
      check: 'frozen',
      chain: 'SOLANA',
      address: facts.recipient,
      message: `the USDC account ${facts.account} of ${facts.recipient} is frozen on SOLANA: nothing can be paid into it, so nothing was signed`,
    };
  }
  return undefined;
}

/** One owner with its `isBlacklisted` reading on the source chain. */
export type OwnerReading = { readonly address: string; readonly blacklisted: boolean };

/** What the source chain showed of the owners that could pay. */
export type OwnerFacts = {
  readonly chain: EvmChain;
  /** The transfer's owners, in the configured order, each with its `isBlacklisted` reading. */
  readonly owners: readonly OwnerReading[];
  /** The owner that signed a permit of this transfer before: only it may sign again (evm-owner.ts). */
  readonly fixed: string | null;
};

/** The owners that may pay (in order), or the refusal when none may. */
export function decideOwners(
  facts: OwnerFacts,
): { readonly owners: readonly string[] } | { readonly refusal: OnchainRefusal } {
  const candidates =
    facts.fixed === null ? facts.owners : facts.owners.filter((o) => o.address === facts.fixed);
  const clear = candidates.filter((o) => !o.blacklisted).map((o) => o.address);
  if (clear.length > 0 || candidates.length === 0) return { owners: clear };
  const listed = candidates.map((o) => o.address);
  const which =
    facts.fixed !== null
      ? `${facts.fixed}, the owner that signed this transfer's permit before and the only one that may sign it again,`
      : listed.length === 1
        ? `${listed[0]}, the only owner of this worker,`
        : `every owner of this worker (${listed.join(', ')})`;
  return {
    refusal: {
      state: 'failed',
      code: 'owner_blacklisted',
      check: 'owner_blacklist',
      chain: facts.chain,
      address: listed.join(','),
      message: `USDC on ${facts.chain} has blacklisted ${which} (isBlacklisted): no permit of it can execute, so nothing was signed`,
    },
  };
}
