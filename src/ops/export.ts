import { transferView, type BatchReader, type TransferView } from '../store/batch-reader.ts';

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
] as const;

function csvCell(v: string | number | null): string {
  if (v === null) return '';
  const s = String(v);
  // Quote per RFC 4180; a leading =,+,-,@ is prefixed so a spreadsheet never runs it as a formula.
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?[0-9.]+$/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

export function csvRow(t: TransferView): string {
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
    t.fee.total,
    t.fee.platform,
    t.fee.gas,
    t.net_receive,
    t.attempts,
    t.error?.code ?? null,
    t.error?.message ?? null,
    t.updated_at,
    t.new_recipient ? 'true' : 'false',
  ];
  return values.map(csvCell).join(',');
}

/** Streams one row per transfer (CSV with header, or a JSON array), page by page. */
export async function* exportBatch(
  reader: BatchReader,
  batchId: string,
  format: 'csv' | 'json',
): AsyncGenerator<string> {
  if (format === 'csv') yield `${EXPORT_COLUMNS.join(',')}\r\n`;
  else yield '[';
  let first = true;
  for await (const page of reader.allTransfers(batchId)) {
    const chunk: string[] = [];
    for (const rec of page) {
      const view = transferView(rec);
      if (format === 'csv') chunk.push(`${csvRow(view)}\r\n`);
      else {
        chunk.push(`${first ? '\n' : ',\n'}${JSON.stringify(view)}`);
        first = false;
      }
    }
    yield chunk.join('');
  }
  if (format === 'json') yield '\n]\n';
}
