export const EXIT = {
  ok: 0,
  /** The input was rejected (nothing enqueued), or with --wait some transfer did not succeed. */
  rejected: 1,
  /** Usage or configuration error. */
  usage: 2,
  /** A batch id reused with different content. */
  conflict: 3,
} as const;
