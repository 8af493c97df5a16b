export const EXIT = {
  ok: 0,
  /** The input was rejected (nothing enqueued), or with --wait some transfer did not succeed. */
  rejected: 1,
  /**
   * Usage or configuration error — among them a batch, transfer or schedule named on the command
   * line that does not exist (every "not found" exits 2: the command was asked about nothing).
   */
  usage: 2,
  /** A conflict: a batch id reused with different content; an approval digest that is not the batch's now. */
  conflict: 3,
  /** Not permitted: four eyes (the submitter of a batch approving it). */
  notPermitted: 4,
} as const;
