import type { IngestIssue } from './ingest-issue.ts';

/** The columns of docs/operating.md "CSV format", in their documented order (also the JSON transfer fields). */
export const COLUMNS = ['id', 'from', 'to', 'amount', 'recipient', 'memo'] as const;
export type Column = (typeof COLUMNS)[number];
export const REQUIRED_COLUMNS: readonly Column[] = ['from', 'to', 'amount', 'recipient'];

export function isColumn(name: string): name is Column {
  return (COLUMNS as readonly string[]).includes(name);
}

export const MEMO_MAX_LENGTH = 140;

/**
 * The longest value each field may have, checked before the field is parsed at all (a hostile row
 * must cost no more than a normal one): an id is at most 64 characters, a chain code a few, an
 * amount a few dozen digits, an address at most 44 (base58 of 32 bytes; EVM is 42), a memo at most
 * 140 characters of up to two UTF-16 units each. Within these, each field's own rule says the rest.
 */
export const FIELD_MAX_LENGTH: Readonly<Record<Column, number>> = {
  id: 64,
  from: 16,
  to: 16,
  amount: 40,
  recipient: 64,
  memo: 2 * MEMO_MAX_LENGTH,
};

/** One input row before validation: values exactly as they came (JSON values may be any type). */
export type RawRow = {
  readonly line: number;
  readonly fields: Readonly<Partial<Record<Column, unknown>>>;
  /** Problems the reader already found in this row (a JSON transfer with an unknown field). */
  readonly issues?: readonly IngestIssue[];
};
