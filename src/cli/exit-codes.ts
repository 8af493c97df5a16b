export const EXIT = {
  ok: 0,
  /** The input was rejected (nothing enqueued), or with --wait some transfer did not succeed. */
  rejected: 1,
  /**
   * Usage or configuration error — among them a batch, transfer or schedule named on the command
   * line that does not exist (every "not found" exits 2: the command was asked about nothing).
   */
  usage: 2,
  /** A batch id reused with different content. */
  conflict: 3,
} as const;
