import type { CctpApi } from '../../service/cctp-api.ts';
import type { PendingBurn } from '../../store/cctp-allowance-need.ts';
import type { CctpReads } from '../../signing/evm/cctp-reads.ts';
import type { OwnerTxSender } from '../../signing/evm/owner-tx/owner-tx-sender.ts';

/** What the CCTP road runs on (docs/cctp.md "The flow"); wired by the worker (pipeline-wiring.ts). */
export type CctpDeps = {
  /** Circle's attestation API behind the shared gate. */
  readonly api: CctpApi;
  /** The owners' own transactions: approve, burn, mint. */
  readonly sender: OwnerTxSender;
  readonly reads: CctpReads;
  /** The EVM owners' addresses, in the configured order. */
  readonly owners: readonly string[];
  /** The (chain, owner) lease of one transfer approving and burning (store/cctp-gate.ts). */
  readonly lease: {
    take(chain: string, owner: string, holder: string): Promise<boolean>;
    release(chain: string, owner: string, holder: string): Promise<void>;
    /**
     * Resolves when a lease of one of `owners` on `chain` is released (by a worker of any process),
     * after `ms`, or when `signal` aborts, whichever comes first.
     */
    waitReleased(
      at: { readonly chain: string; readonly owners: readonly string[]; readonly holder: string },
      ms: number,
      signal: AbortSignal,
    ): Promise<void>;
  };
  /**
   * The batch's transfers from `chain` not burned yet that `owner` may burn (its own, or no owner
   * chosen yet): what one approval covers (store/cctp-allowance-need.ts).
   */
  pendingBurns(batchId: string, chain: string, owner: string): Promise<readonly PendingBurn[]>;
};
