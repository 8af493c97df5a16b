/**
 * One problem found in the input. `line` counts from 1 at the CSV header (for JSON input it is the
 * 1-based position of the transfer in `transfers`); it is null for problems of the whole input
 * (a control total, the batch cap). `column` names the CSV column or JSON field, or is null when
 * the problem is the row as a whole (a likely duplicate).
 */
export type IngestIssue = {
  readonly line: number | null;
  readonly column: string | null;
  readonly message: string;
};

/**
 * Why an input was refused as a whole, before or apart from its rows: its header, its CSV syntax,
 * an empty file, a malformed JSON document, a control total, no rows at all; then, at enqueue, a
 * malformed batch id or callback_url, the batch's total over MAX_BATCH_USDC, or no valid row left.
 */
export type WholeInputRefusal =
  | 'header'
  | 'syntax'
  | 'empty'
  | 'document'
  | 'control_total'
  | 'no_rows'
  | 'batch_id'
  | 'callback_url'
  | 'batch_total'
  | 'no_valid_rows';

/** Why a row did not make it into the batch: reported in `errors` and counted apart. */
export type IssueKind = 'invalid' | 'duplicate';

/** `line N, column C: message`, the form the CLI prints. */
export function formatIssue(issue: IngestIssue): string {
  const where = [
    issue.line === null ? null : `line ${issue.line}`,
    issue.column === null ? null : `column ${issue.column}`,
  ].filter((s) => s !== null);
  return where.length > 0 ? `${where.join(', ')}: ${issue.message}` : issue.message;
}

/** Issues in file order (whole-input problems first), stable for equal lines. */
export function sortIssues(issues: readonly IngestIssue[]): IngestIssue[] {
  return issues
    .map((issue, index) => ({ issue, index }))
    .sort((a, b) => (a.issue.line ?? 0) - (b.issue.line ?? 0) || a.index - b.index)
    .map((x) => x.issue);
}
