import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Chain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { bookAddressOf } from '../domain/recipient-key.ts';
import { forgetUnapproved, judgeUnapproved } from '../store/approval-window.ts';
import { forgetOpenPayments, judgeExposure, type OpenPayment } from '../store/new-recipient-exposure.ts';
import { createRecipientBook } from '../store/recipient-book.ts';
import type { DroppedRow } from '../store/batch-writer.ts';
import { counted } from '../domain/plural.ts';

/**
 * The holds every row entering the queue passes — a new batch, a schedule's firing, or the rows
 * `retry` re-queues (docs/promises.md, promise 5) — and what `NEW_RECIPIENT_POLICY=reject` refuses:
 * - a row paying an address removed from the address book holds its batch, under every policy
 *   (removal is how ops answer a reported fraud);
 * - under `hold`, a row paying an address not in the book holds its batch;
 * - under `allow`, `NEW_RECIPIENT_MAX_USDC` holds a batch that takes what a new recipient is paid
 *   in all, across finished and unfinished batches, past the cap;
 * - `APPROVAL_THRESHOLD_USDC`: the rows that take what was enqueued without approval in the last
 *   24 hours to the threshold are held.
 * A held batch gets no jobs until `approve`; its `held_reason` is these reasons joined.
 */
export type HoldConfig = Pick<Config, 'approvalThresholdUsdc' | 'newRecipientPolicy' | 'newRecipientMaxUsdc'>;

/** What the rules read of a row. */
export type Payee = {
  readonly id: string;
  readonly line: number;
  readonly to: Chain;
  readonly recipient: string;
  readonly amount: bigint;
};

/** The address book's word on the rows: those whose recipient was not in it, by transfer id. */
export type RecipientScreen = {
  /** Not in the book (never added, or removed): the rows flagged `new_recipient`. */
  readonly notInBook: ReadonlySet<string>;
  /** Of those, the ones whose address was removed from the book. */
  readonly removed: ReadonlySet<string>;
};

/**
 * `own`: book keys of the treasury's own addresses, always known recipients (a rebalancing move
 * pays the treasury itself: never held or refused as new). `submitter`: who submits the rows — an
 * address they added themselves is still new for their batch until an approval vouched for it
 * (docs/access.md "Four eyes over the address book": one name holding `submitter` and `approver`
 * cannot add an address and then pay it unheld).
 */
export async function screenRecipients(
  redis: Redis,
  prefix: string,
  rows: readonly Payee[],
  options: { readonly own?: ReadonlySet<string> | undefined; readonly submitter?: string | undefined } = {},
): Promise<RecipientScreen> {
  const own = options.own ?? new Set<string>();
  const book = createRecipientBook({ redis, prefix });
  const keys = rows.map((r) => bookAddressOf(r).key);
  const statuses = await book.statuses(keys);
  const notInBook = new Set<string>();
  const removed = new Set<string>();
  rows.forEach((r, i) => {
    if (own.has(keys[i] as string)) return;
    const entry = statuses.get(keys[i] as string);
    const status = entry?.status ?? 'new';
    if (entry?.status === 'known' && knownTo(entry, options.submitter)) return;
    notInBook.add(r.id);
    if (status === 'removed') removed.add(r.id);
  });
  return { notInBook, removed };
}

/** A book entry counts as known for a batch unless its own submitter added it and no approval vouched for it. */
function knownTo(
  entry: { readonly addedBy: string | null; readonly vouched: boolean },
  submitter?: string,
): boolean {
  return entry.vouched || submitter === undefined || entry.addedBy !== submitter;
}

/** `NEW_RECIPIENT_POLICY=reject`: each row paying an address not in the book, at its line. */
export function refusedByBook(rows: readonly Payee[], screen: RecipientScreen): DroppedRow[] {
  return rows
    .filter((r) => screen.notInBook.has(r.id))
    .map((r) => ({
      line: r.line,
      column: 'recipient',
      message: `recipient ${r.recipient} is ${screen.removed.has(r.id) ? 'removed from' : 'not in'} the address book (NEW_RECIPIENT_POLICY=reject)`,
    }));
}

export type HoldDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: HoldConfig;
  readonly now: number;
};

export type HoldDecision = {
  /** Empty: not held. */
  readonly reasons: string[];
  /** Takes back what judging counted (the enqueue was refused after all and wrote nothing). */
  undo(): Promise<void>;
};

/**
 * Judges the rows entering the queue. `member` names this entry in the rolling approval window
 * (the batch id for an enqueue); `outside` are reasons the caller already has (a schedule's earlier
 * firing still held). The threshold is counted only when nothing else holds the batch: a held batch
 * runs only with an approval, so it is not "enqueued without approval".
 */
export async function decideHolds(
  deps: HoldDeps,
  rows: readonly Payee[],
  screen: RecipientScreen,
  options: {
    readonly batchId: string;
    readonly member: string;
    readonly outside?: readonly string[] | undefined;
    /** A worker judging a batch under its own controls (approval-window.ts `recheck`). */
    readonly recheck?: boolean | undefined;
  },
): Promise<HoldDecision> {
  const reasons = [...(options.outside ?? []), ...bookReasons(deps.config, rows, screen)];
  const registered = await exposureReason(deps, rows, screen, options.batchId, reasons);
  let counted = false;
  const threshold = deps.config.approvalThresholdUsdc;
  if (threshold !== undefined) {
    const amount = rows.reduce((s, r) => s + r.amount, 0n);
    const verdict = await judgeUnapproved(deps.redis, deps.prefix, {
      member: options.member,
      amount,
      threshold,
      mode: reasons.length > 0 ? 'peek' : options.recheck ? 'recheck' : 'count',
      now: deps.now,
    });
    counted = verdict.counted;
    if (verdict.reached) {
      reasons.push(
        `APPROVAL_THRESHOLD_USDC: ${formatUsdc(verdict.before + amount)} USDC enqueued without approval in the last 24 h (these rows included) reaches the threshold of ${formatUsdc(threshold)}`,
      );
    }
  }
  return {
    reasons,
    async undo() {
      if (counted) await forgetUnapproved(deps.redis, deps.prefix, options.member);
      await forgetOpenPayments(deps.redis, deps.prefix, registered);
    },
  };
}

function bookReasons(config: HoldConfig, rows: readonly Payee[], screen: RecipientScreen): string[] {
  const reasons: string[] = [];
  const removed = rows.filter((r) => screen.removed.has(r.id));
  if (removed.length > 0) {
    reasons.push(
      `removed recipients: ${describeRows(removed)} removed from the address book (held until approved, every time, unless added again)`,
    );
  }
  const fresh = rows.filter((r) => screen.notInBook.has(r.id) && !screen.removed.has(r.id));
  // Under `reject` such rows never reach here at enqueue; a retried row whose address left the book
  // since is held rather than paid.
  if (fresh.length > 0 && config.newRecipientPolicy !== 'allow') {
    reasons.push(
      `new recipients: ${describeRows(fresh)} not in the address book (NEW_RECIPIENT_POLICY=${config.newRecipientPolicy})`,
    );
  }
  return reasons;
}

/**
 * `NEW_RECIPIENT_MAX_USDC` under `allow`: registers the rows paying new recipients and adds a
 * reason when what one is paid in all passes the cap. Returns the registrations this call made.
 */
async function exposureReason(
  deps: HoldDeps,
  rows: readonly Payee[],
  screen: RecipientScreen,
  batchId: string,
  reasons: string[],
): Promise<OpenPayment[]> {
  const cap = deps.config.newRecipientMaxUsdc;
  if (cap === undefined || deps.config.newRecipientPolicy !== 'allow') return [];
  const payments = rows
    .filter((r) => screen.notInBook.has(r.id) && !screen.removed.has(r.id))
    .map((r) => ({ recipientKey: bookAddressOf(r).key, batchId, transferId: r.id, amount: r.amount }));
  if (payments.length === 0) return [];
  const { sums, registered } = await judgeExposure(deps.redis, deps.prefix, payments, {
    batchId,
    now: deps.now,
  });
  const over = [...sums].filter(([, sum]) => sum > cap);
  if (over.length > 0) {
    const addressOf = new Map(rows.map((r) => [bookAddressOf(r).key, r.recipient]));
    const shown = over
      .slice(0, 3)
      .map(([key, sum]) => `${addressOf.get(key) ?? key} (${formatUsdc(sum)} USDC)`)
      .join(', ');
    reasons.push(
      `NEW_RECIPIENT_MAX_USDC: ${over.length} new recipient(s) would be paid more than ${formatUsdc(cap)} USDC in all: ${shown}${over.length > 3 ? ', …' : ''}`,
    );
  }
  return registered;
}

/** A recipient not in the book, with what the rows pay it (`enqueue --dry-run`). */
export type NewRecipientTotal = {
  readonly address: string;
  readonly rows: number;
  /** micro-USDC */
  readonly amount: bigint;
  readonly removed: boolean;
};

/** The rows' recipients that are not in the book, largest total first. */
export function newRecipientTotals(rows: readonly Payee[], screen: RecipientScreen): NewRecipientTotal[] {
  const byKey = new Map<string, { address: string; rows: number; amount: bigint; removed: boolean }>();
  for (const r of rows) {
    if (!screen.notInBook.has(r.id)) continue;
    const key = bookAddressOf(r).key;
    const t = byKey.get(key) ?? {
      address: r.recipient,
      rows: 0,
      amount: 0n,
      removed: screen.removed.has(r.id),
    };
    t.rows++;
    t.amount += r.amount;
    byKey.set(key, t);
  }
  return [...byKey.values()].sort((a, b) => (a.amount === b.amount ? 0 : a.amount > b.amount ? -1 : 1));
}

function describeRows(rows: readonly Payee[]): string {
  const addresses = new Set(rows.map((r) => bookAddressOf(r).key)).size;
  const lines = rows.slice(0, 5).map((r) => r.line);
  const pay = rows.length === 1 ? 'pays' : 'pay';
  return `${counted(rows.length, 'row')} ${pay} ${counted(addresses, 'address', 'addresses')} (line ${lines.join(', ')}${rows.length > 5 ? ', …' : ''})`;
}
