import { tryParseUsdc } from '../domain/money.ts';
import { isTransferRoad, TRANSFER_ROADS, type TransferRoad } from '../domain/roads.ts';
import { inputExcerpt } from '../domain/text.ts';
import { isColumn, type RawRow } from './columns.ts';
import type { IngestIssue } from './ingest-issue.ts';
import { IssueList } from './issue-list.ts';

/** The JSON document of `POST /v1/batches` (docs/operating.md "CSV format"), checked field by field. */
export type JsonBatchInput = {
  readonly batchId: string | undefined;
  /** `via`: the road every transfer takes (docs/cctp.md); undefined for TRANSFER_VIA's. */
  readonly via: TransferRoad | undefined;
  /** The transfers as rows, made one at a time as they are read (a large body is not copied whole). */
  readonly rows: Iterable<RawRow>;
  readonly expect: { readonly rows?: number; readonly total?: bigint };
  readonly callbackUrl: string | undefined;
  /** Problems of the document as a whole (wrong shape, unknown fields, bad `expect`): the first ones. */
  readonly issues: IngestIssue[];
  /** Problems of the document as a whole past those in `issues`. */
  readonly omittedIssues: number;
};

const TOP_LEVEL = ['batch_id', 'via', 'transfers', 'expect', 'callback_url'];

/**
 * Turns a parsed JSON body into rows for the same validator the CSV goes through. For JSON, a row's
 * `line` is its 1-based position in `transfers` (`transfers[0]` is line 1) and `column` is the field
 * name. Returns undefined when the body is not an object with a `transfers` array.
 */
export function readJsonBatch(doc: unknown): JsonBatchInput | undefined {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return undefined;
  const body = doc as Record<string, unknown>;
  if (!Array.isArray(body['transfers'])) return undefined;
  const issues = new IssueList();
  const whole = (column: string | null, message: string) => issues.push({ line: null, column, message });

  for (const key of Object.keys(body)) {
    if (!TOP_LEVEL.includes(key)) whole(inputExcerpt(key, 40), `unknown field "${inputExcerpt(key, 40)}"`);
  }
  let batchId: string | undefined;
  if (body['batch_id'] !== undefined && body['batch_id'] !== null) {
    if (typeof body['batch_id'] === 'string') batchId = body['batch_id'];
    else whole('batch_id', 'batch_id must be a string');
  }
  let via: TransferRoad | undefined;
  if (body['via'] !== undefined && body['via'] !== null) {
    if (typeof body['via'] === 'string' && isTransferRoad(body['via'])) via = body['via'];
    else whole('via', `via must be one of ${TRANSFER_ROADS.join(', ')}`);
  }
  let callbackUrl: string | undefined;
  if (body['callback_url'] !== undefined && body['callback_url'] !== null) {
    if (typeof body['callback_url'] === 'string') callbackUrl = body['callback_url'];
    else whole('callback_url', 'callback_url must be a string');
  }

  const expect: { rows?: number; total?: bigint } = {};
  const e = body['expect'];
  if (e !== undefined && e !== null) {
    if (typeof e !== 'object' || Array.isArray(e))
      whole('expect', 'expect must be an object { rows, total }');
    else {
      const { rows, total, ...rest } = e as Record<string, unknown>;
      for (const key of Object.keys(rest))
        whole(`expect.${inputExcerpt(key, 40)}`, `unknown field "expect.${inputExcerpt(key, 40)}"`);
      if (rows !== undefined) {
        if (typeof rows === 'number' && Number.isSafeInteger(rows) && rows >= 0) expect.rows = rows;
        else whole('expect.rows', 'expect.rows must be a whole number');
      }
      if (total !== undefined) {
        const r = typeof total === 'string' ? tryParseUsdc(total, { allowZero: true }) : undefined;
        if (r?.ok) expect.total = r.value;
        else
          whole(
            'expect.total',
            `expect.total must be a decimal string${r && !r.ok ? `: it ${r.reason}` : ''}`,
          );
      }
    }
  }

  const transfers = body['transfers'] as unknown[];
  return {
    batchId,
    via,
    rows: { [Symbol.iterator]: () => jsonRows(transfers) },
    expect,
    callbackUrl,
    issues: issues.listed,
    omittedIssues: issues.omitted,
  };
}

/** The transfers of a JSON batch as rows: `line` is the 1-based position, unknown fields are issues. */
function* jsonRows(transfers: readonly unknown[]): Generator<RawRow> {
  for (let index = 0; index < transfers.length; index++) {
    const t = transfers[index];
    const line = index + 1;
    if (typeof t !== 'object' || t === null || Array.isArray(t)) {
      yield { line, fields: {}, issues: [{ line, column: null, message: 'a transfer must be an object' }] };
      continue;
    }
    const fields: Record<string, unknown> = {};
    const rowIssues: IngestIssue[] = [];
    for (const [key, value] of Object.entries(t)) {
      if (isColumn(key)) fields[key] = value;
      else
        rowIssues.push({
          line,
          column: inputExcerpt(key, 40),
          message: `unknown field "${inputExcerpt(key, 40)}"`,
        });
    }
    yield rowIssues.length > 0 ? { line, fields, issues: rowIssues } : { line, fields };
  }
}
