import type { TransferRoad } from '../domain/roads.ts';
import type { IngestIssue } from './ingest-issue.ts';
import type { ValidatedInput } from './validate-input.ts';

/*
 * The rows a road cannot carry (docs/cctp.md "Which road"): Circle's CCTP road runs between EVM
 * chains only, so a `cctp`/`cctp-fast` batch's SOLANA rows (from or to) are invalid rows, reported
 * like any other (line, column, message): they reject a strict input, and `--skip-invalid` leaves
 * them out.
 */

/** The problem of a row on `via`, naming its column; undefined when the road can carry it. */
export function roadProblem(
  t: { readonly from: string; readonly to: string },
  via: TransferRoad,
): { readonly column: string; readonly message: string } | undefined {
  if (via === 'service') return undefined;
  const column = t.from === 'SOLANA' ? 'from' : t.to === 'SOLANA' ? 'to' : undefined;
  if (column === undefined) return undefined;
  return {
    column,
    message: `SOLANA is not on the ${via} road (EVM chains only); take this row through the service (via service)`,
  };
}

/** The input with the rows `via` cannot carry moved from its transfers to its invalid rows. */
export function onRoad(input: ValidatedInput, via: TransferRoad): ValidatedInput {
  if (via === 'service') return input;
  const issues: IngestIssue[] = [];
  const transfers = input.transfers.filter((t) => {
    const problem = roadProblem(t, via);
    if (problem !== undefined) issues.push({ line: t.line, ...problem });
    return problem === undefined;
  });
  if (issues.length === 0) return input;
  return {
    ...input,
    transfers,
    issues: [...input.issues, ...issues],
    invalidRows: input.invalidRows + issues.length,
  };
}
