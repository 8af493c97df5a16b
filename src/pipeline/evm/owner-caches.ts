import type { BalanceReading } from '../../store/owner-balance.ts';

/*
 * What one worker process remembers about its treasury owners between transfers (evm-owner.ts):
 * the last `balanceOf(owner)` reading per (chain, owner), shared by this process's choices, and
 * when it last looked up the receipts of an owner's accepted transfers. Made by the wiring, once
 * per process (or per test), and passed in with the EVM dependencies: nothing is kept at module
 * level.
 */

/** A balance reading and when it was taken; `refresh` while a newer one is being read. */
export type CachedReading = {
  at: number;
  reading: BalanceReading | undefined;
  refresh?: Promise<unknown> | undefined;
};

export type OwnerCaches = {
  /** `<chain>|<owner>` → the last balance reading. */
  readonly readings: Map<string, CachedReading>;
  /** `<chain>|<owner>` → the first reading while it is under way (the start's, or a first row's). */
  readonly firstReads: Map<string, Promise<BalanceReading | undefined>>;
  /** `<chain>|<owner>` → when its receipts were last looked up (ms). */
  readonly lastLearned: Map<string, number>;
};

export function createOwnerCaches(): OwnerCaches {
  return { readings: new Map(), firstReads: new Map(), lastLearned: new Map() };
}
