import type { IngestIssue } from './ingest-issue.ts';

/** The columns of README "CSV format", in their documented order (also the JSON transfer fields). */
export const COLUMNS = ['id', 'from', 'to', 'amount', 'recipient', 'memo'] as const;
export type Column = (typeof COLUMNS)[number];
export const REQUIRED_COLUMNS: readonly Column[] = ['from', 'to', 'amount', 'recipient'];

export function isColumn(name: string): name is Column {
  return (COLUMNS as readonly string[]).includes(name);
}

export const MEMO_MAX_LENGTH = 140;

/** One input row before validation: values exactly as they came (JSON values may be any type). */
export type RawRow = {
  readonly line: number;
  readonly fields: Readonly<Partial<Record<Column, unknown>>>;
  /** Problems the reader already found in this row (a JSON transfer with an unknown field). */
  readonly issues?: readonly IngestIssue[];
};
