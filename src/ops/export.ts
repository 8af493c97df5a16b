import { escapeControlCharacters, escapeJsonControls } from '../domain/text.ts';
import { type BatchReader } from '../present/batch-status.ts';
import { transferView, type TransferView } from '../present/transfer-view.ts';

export const EXPORT_COLUMNS = [
  'id',
  'line',
  'from',
  'to',
  'amount',
  'recipient',
  'memo',
  'state',
  'intent_id',
  'intent_status',
  'tx_hash',
  'tx_signature',
  'fee_total',
  'fee_platform',
  'fee_gas',
  'net_receive',
  'attempts',
  'error_code',
  'error_message',
  'updated_at',
  'new_recipient',
  // The EVM owner whose permit pays it, as in the JSON export (empty before one is chosen, and for
  // SOLANA-source rows); last, so that a reader of the earlier columns by position reads them still.
  'owner',
] as const;

function csvCell(v: string | number | null, forTerminal: boolean): string {
  if (v === null) return '';
  const s = forTerminal ? escapeControlCharacters(String(v)) : String(v);
  // Quote per RFC 4180; a leading =,+,-,@ is prefixed so a spreadsheet never runs it as a formula.
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?[0-9.]+$/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * One transfer as a CSV line. `forTerminal`: control characters in values (a memo recorded before
 * memos were plain text, a message from the service) are shown escaped instead of acting on the
 * terminal; a file keeps the values as they are.
 */
function csvRow(t: TransferView, forTerminal = false): string {
  const values: (string | number | null)[] = [
    t.id,
    t.line,
    t.from,
    t.to,
    t.amount,
    t.recipient,
    t.memo,
    t.state,
    t.intent_id,
    t.intent_status,
    t.tx_hash,
    t.tx_signature,
    t.fee?.total ?? null,
    t.fee?.platform ?? null,
    t.fee?.gas ?? null,
    t.net_receive,
    t.attempts,
    t.error?.code ?? null,
    t.error?.message ?? null,
    t.updated_at,
    t.new_recipient ? 'true' : 'false',
    t.owner,
  ];
  return values.map((v) => csvCell(v, forTerminal)).join(',');
}

/**
 * Streams one row per transfer (CSV with header, or a JSON array), page by page. JSON escapes every
 * control character (the same values); CSV only `forTerminal` (see csvRow).
 */
export async function* exportBatch(
  reader: BatchReader,
  batchId: string,
  format: 'csv' | 'json',
  options: { forTerminal?: boolean } = {},
): AsyncGenerator<string> {
  const forTerminal = options.forTerminal === true;
  if (format === 'csv') yield `${EXPORT_COLUMNS.join(',')}\r\n`;
  else yield '[';
  let first = true;
  for await (const page of reader.allTransfers(batchId)) {
    const chunk: string[] = [];
    for (const rec of page) {
      const view = transferView(rec);
      if (format === 'csv') chunk.push(`${csvRow(view, forTerminal)}\r\n`);
      else {
        chunk.push(`${first ? '\n' : ',\n'}${escapeJsonControls(JSON.stringify(view))}`);
        first = false;
      }
    }
    yield chunk.join('');
  }
  if (format === 'json') yield '\n]\n';
}
