import { sortIssues, type IngestIssue } from './ingest-issue.ts';

/** How many problems an answer lists (docs/operating.md "CSV format": `errors` holds the first 1,000). */
export const MAX_LISTED_ISSUES = 1_000;

/**
 * Problems in the order found, keeping the first `limit` and counting the rest: a file of a million
 * bad rows costs a counter past the first thousand, not a million messages in memory and in the
 * answer (`error_count` says how many there were).
 */
export class IssueList {
  readonly #limit: number;
  readonly #listed: IngestIssue[] = [];
  #count = 0;

  constructor(limit: number = MAX_LISTED_ISSUES) {
    this.#limit = limit;
  }

  push(...issues: readonly IngestIssue[]): void {
    for (const issue of issues) {
      if (this.#listed.length < this.#limit) this.#listed.push(issue);
      this.#count++;
    }
  }

  /** Every problem pushed, listed or not. */
  get count(): number {
    return this.#count;
  }

  /** The first `limit` problems, in the order pushed. */
  get listed(): IngestIssue[] {
    return [...this.#listed];
  }

  /** Problems counted but not listed. */
  get omitted(): number {
    return this.#count - this.#listed.length;
  }
}

/** The first MAX_LISTED_ISSUES problems in file order (whole-input problems first). */
export function firstIssues(issues: readonly IngestIssue[]): IngestIssue[] {
  return sortIssues(issues).slice(0, MAX_LISTED_ISSUES);
}
