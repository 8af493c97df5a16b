import type { EvmChain } from '../../domain/chains.ts';
import type { EvmSigner, NonceLease } from '../../signing/types.ts';
import type { Ctx } from '../context.ts';
import type { EvmDeps } from '../pipeline-deps.ts';

/** One run's EVM parts for its source chain: what every step of the EVM flow acts with. */
export type EvmRun = { readonly ctx: Ctx; readonly evm: EvmDeps; readonly chain: EvmChain };

/**
 * The same, once the owner that pays is chosen and its (chain, owner) nonce lease is held;
 * `reserved` when this run itself reserved the transfer's amount on that owner's balance.
 */
export type OwnerTurn = EvmRun & {
  readonly signer: EvmSigner;
  readonly lease: NonceLease;
  readonly reserved?: boolean;
};

/** The lease holder of a transfer: the transfer itself (`<batchId>/<transferId>`), not the process. */
export const holderOf = (ctx: Ctx) => `${ctx.batchId}/${ctx.transferId}`;
