import type { Redis } from 'ioredis';
import { ValidationError } from '../domain/errors.ts';
import { labelProblem, parseBookAddress, type BookAddress } from '../domain/recipient-key.ts';
import type { IngestIssue } from '../ingest/ingest-issue.ts';
import type { RecipientRow } from '../ingest/recipient-file.ts';
import type { Screen } from '../ingest/row-validator.ts';
import { recordAudit } from '../store/audit.ts';
import { createRecipientBook, type BookEntry } from '../store/recipient-book.ts';

/**
 * The address book's operations, shared by `usdc-batch recipients` and `/v1/recipients`; every
 * change is in the audit with its actor.
 */
type RecipientOpsDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  /** `cli:<user>`, or the name of the HTTP credential (role approver). */
  readonly actor: string;
  readonly auditLogFile?: string | undefined;
  readonly now?: () => number;
  /** The sanctions lists in force: a listed address cannot enter the book (docs/screening.md). */
  readonly screen?: Screen | undefined;
};

/** An entry as `recipients list --json` and `GET /v1/recipients` show it. */
type RecipientView = {
  readonly address: string;
  readonly family: string;
  readonly label: string | null;
  readonly added_by: string;
  readonly added_at: string;
  readonly via: string;
};

function bookOf(deps: RecipientOpsDeps) {
  return createRecipientBook({
    redis: deps.redis,
    prefix: deps.prefix,
    ...(deps.now ? { now: deps.now } : {}),
  });
}

/** An address typed by a person; refused (exit 1, HTTP 422) with the reason when it is none. */
export function checkAddress(text: string): BookAddress {
  const r = parseBookAddress(text);
  if (!r.ok) throw new ValidationError('USDC_RECIPIENT_ADDRESS', `"${text.slice(0, 60)}" ${r.reason}`);
  return r.value;
}

export async function listRecipients(deps: Omit<RecipientOpsDeps, 'actor'>): Promise<RecipientView[]> {
  const entries = await bookOf({ ...deps, actor: '' }).list();
  return entries.map(viewOf);
}

function viewOf(e: BookEntry): RecipientView {
  return {
    address: e.address,
    family: e.family,
    label: e.label,
    added_by: e.added_by,
    added_at: new Date(e.added_at).toISOString(),
    via: e.via,
  };
}

/** Adds one address (or updates its label); an address removed earlier is trusted again. */
export async function addRecipient(
  deps: RecipientOpsDeps,
  text: string,
  label: string | undefined,
): Promise<{ address: BookAddress; was: 'new' | 'known' | 'removed' }> {
  const address = checkAddress(text);
  const bad = label === undefined ? undefined : labelProblem(label);
  if (bad) throw new ValidationError('USDC_RECIPIENT_LABEL', bad);
  await refuseListed(deps, address);
  const book = bookOf(deps);
  const was = (await book.statuses([address.key])).get(address.key)?.status ?? 'new';
  const { changed } = await book.add([{ address, label }], deps.actor, 'add');
  // A known address given no new label changed nothing: not audited (docs/audit.md).
  if (changed > 0)
    await recordAudit(deps, {
      who: deps.actor,
      action: 'recipient_add',
      detail: { address: address.address, family: address.family, label: label ?? null, was },
    });
  return { address, was };
}

/**
 * Removes an address: every later payment to it is held for approval, and a batch in flight holds
 * its transfers to it that are not signed yet. A tombstone is left even for an address that was not
 * in the book (removal is how ops answer a reported fraud).
 */
export async function removeRecipient(
  deps: RecipientOpsDeps,
  text: string,
): Promise<{ address: BookAddress; existed: boolean }> {
  const address = checkAddress(text);
  const { existed } = await bookOf(deps).remove(address, deps.actor);
  await recordAudit(deps, {
    who: deps.actor,
    action: 'recipient_remove',
    detail: { address: address.address, family: address.family, was_in_book: existed },
  });
  return { address, existed };
}

type ImportOutcome =
  | { readonly status: 'imported'; readonly rows: number; readonly added: number; readonly updated: number }
  | { readonly status: 'rejected'; readonly errors: IngestIssue[] };

/** Imports validated rows, all of them or (with any problem) none; one audit entry per import. */
export async function importRecipients(
  deps: RecipientOpsDeps,
  input: { readonly rows: readonly RecipientRow[]; readonly issues: readonly IngestIssue[] },
  source: string,
): Promise<ImportOutcome> {
  const listed = listedRows(deps, input.rows);
  if (input.issues.length > 0 || listed.length > 0) {
    if (listed.length > 0) await auditListed(deps, listed);
    return { status: 'rejected', errors: [...input.issues, ...listed.map((l) => l.issue)] };
  }
  const { added, updated, changed } = await bookOf(deps).add(
    input.rows.map((r) => ({ address: r.address, label: r.label })),
    deps.actor,
    'import',
  );
  if (changed > 0)
    await recordAudit(deps, {
      who: deps.actor,
      action: 'recipient_import',
      detail: { source: source.slice(0, 200), rows: input.rows.length, added, updated },
    });
  return { status: 'imported', rows: input.rows.length, added, updated };
}

/** A listed address is refused (exit 1, HTTP 422) and the refusal audited (`who`: the list). */
async function refuseListed(deps: RecipientOpsDeps, address: BookAddress): Promise<void> {
  const hit = deps.screen?.(address.address);
  if (!hit) return;
  const message = `${address.address} is on the sanctions list ${hit.list} of ${hit.date}: it cannot enter the address book`;
  await auditListed(deps, [
    { who: `list:${hit.list}`, address: address.address, issue: { line: null, column: 'address', message } },
  ]);
  throw new ValidationError('USDC_RECIPIENT_SANCTIONED', message);
}

type ListedRow = { readonly who: string; readonly address: string; readonly issue: IngestIssue };

/** The rows of an import whose address a list in force names, each as a problem at its line. */
function listedRows(deps: RecipientOpsDeps, rows: readonly RecipientRow[]): ListedRow[] {
  if (!deps.screen) return [];
  return rows.flatMap((r) => {
    const hit = deps.screen?.(r.address.address);
    if (!hit) return [];
    const message = `${r.address.address} is on the sanctions list ${hit.list} of ${hit.date}`;
    return [
      {
        who: `list:${hit.list}`,
        address: r.address.address,
        issue: { line: r.line, column: 'address', message },
      },
    ];
  });
}

async function auditListed(deps: RecipientOpsDeps, listed: readonly ListedRow[]): Promise<void> {
  for (const l of listed) {
    await recordAudit(deps, {
      who: l.who,
      action: 'screening_refused',
      detail: {
        check: 'list',
        code: 'recipient_sanctioned',
        address: l.address,
        by: deps.actor,
        where: 'address_book',
      },
    });
  }
}
