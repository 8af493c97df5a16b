/** What a payout id and a batch id may be (docs/operating.md "CSV format", docs/http-api.md): one rule for the CLI, HTTP and ingest. */

/** A payout id (the CSV's `id`), also a transfer id. */
export const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/**
 * A batch id starts with a letter or digit: `.`, `..`, `-x` or `--help` would read as paths or
 * options wherever an id is typed or joined into a path, and no batch needs them.
 */
export const BATCH_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
/** BATCH_ID_PATTERN in words, for messages. */
export const BATCH_ID_RULE =
  '1-100 characters of A-Z, a-z, 0-9, "_", "." or "-", starting with a letter or digit';
