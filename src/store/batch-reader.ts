import type { Redis } from 'ioredis';
import { TRANSFER_STATES, type TransferState } from '../domain/transfer.ts';
import { formatUsdc } from '../domain/money.ts';
import { approvalDigestOf, approvalsOf, type Approval } from './approvals.ts';
import { readScreening, screeningView, type ScreeningView } from './screening-state.ts';
import { keys } from './keys.ts';
import { readPause, type PauseState } from './pause-flag.ts';
import { intentCounts, isSettled, paidTotals, type IntentCounts, type PaidTotals } from './settlement.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';

/** The status document of docs/http-api.md (`status --json`, `GET /v1/batches/:id`, callbacks). */
export type TransferView = {
  id: string;
  line: number;
  from: string;
  to: string;
  amount: string;
  recipient: string;
  memo: string | null;
  state: TransferState;
  intent_id: string | null;
  intent_status: string | null;
  tx_hash: string | null;
  tx_signature: string | null;
  /** The EVM owner whose permit pays it; null before one is chosen and for SOLANA sources. */
  owner: string | null;
  /** True when its address was not in the address book when the batch was enqueued. */
  new_recipient: boolean;
  /** The fee estimate; null before the transfer was estimated (never 0.00 for "not known"). */
  fee: { total: string; platform: string; gas: string } | null;
  /** Null while `fee` is. */
  net_receive: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  /**
   * What the worker saw that decided its fate when it was not simply accepted (a lost answer, a
   * refusal, a chain reading, a deadline passed), oldest first, `<ISO time> <what>`; empty for a
   * plain submitted.
   */
  evidence: string[];
  wait_reason: string | null;
  /** Its trace (docs/traces.md); null when no traced run of it started. */
  trace_id: string | null;
  updated_at: string | null;
};

export type BatchSummary = {
  batch_id: string;
  created_at: string | null;
  source: string;
  /**
   * Who enqueued it (docs/access.md "Four eyes"): an HTTP credential's name, `cli:<name>`, `schedule:<name>`;
   * null for a batch enqueued before it was recorded.
   */
  submitted_by: string | null;
  complete: boolean;
  /**
   * Complete, and every submitted intent has a final status; null when some submitted intent can
   * never have one here (the service has no status route for it).
   */
  settled: boolean | null;
  held: boolean;
  /** Why the batch waits for approval; null when it is not held. */
  held_reason: string | null;
  /**
   * While held: the SHA-256 of the rows an approval would release (approval-digest.ts), which an
   * approval names; null when the batch is not held (or is still being written).
   */
  approval_digest: string | null;
  /** The approvals of its current (or last) hold, oldest first; only those of `approval_digest` count. */
  approvals: Approval[];
  /** Distinct approvers a hold of it needs, none of them its submitter. */
  approvals_required: number;
  counts: Record<TransferState, number>;
  /** The submitted transfers' intents by where they are (settlement.ts); they add up to `counts.submitted`. */
  intents: IntentCounts;
  /**
   * As planned (every row's amount and recorded estimate); `fee` and `net_receive` are null while a
   * transfer that may still be sent (queued, held, in progress) has no estimate yet. `paid`: the
   * submitted transfers only.
   */
  totals: { amount: string; fee: string | null; net_receive: string | null; paid: PaidTotals };
};

/** Processing paused (docs/operating.md, `pause`): since when (ISO) and by whom; null while it runs. */
export type PausedView = { since: string; by: string | null };

export type BatchStatus = BatchSummary & {
  /** Whether processing is paused now, for every batch (the status document's `paused`). */
  paused: PausedView | null;
  transfers: TransferView[];
  /** The sanctions lists the workers screen with (screening-state.ts; docs/screening.md). */
  screening: ScreeningView;
  next_cursor?: string | null;
};

/** The pause flag as the status document shows it. */
export function pausedView(p: PauseState | null): PausedView | null {
  return p === null ? null : { since: new Date(p.since).toISOString(), by: p.by };
}

const iso = (ms: string | undefined | null): string | null =>
  ms ? new Date(Number(ms)).toISOString() : null;
const amt = (v: bigint | null): string | null => (v === null ? null : formatUsdc(v));

export function transferView(t: TransferRecord): TransferView {
  return {
    id: t.id,
    line: t.line,
    from: t.from,
    to: t.to,
    amount: formatUsdc(t.amount),
    recipient: t.recipient,
    memo: t.memo,
    state: t.state,
    intent_id: t.intentId,
    intent_status: t.intentStatus,
    tx_hash: t.txHash,
    tx_signature: t.txSignature,
    owner: t.owner,
    new_recipient: t.newRecipient,
    fee: feeView(t),
    net_receive: t.feeTotal === null ? null : amt(t.netReceive),
    attempts: t.attempts,
    error: t.errorCode ? { code: t.errorCode, message: t.errorMessage ?? '' } : null,
    evidence: [...t.evidence],
    wait_reason: t.waitReason,
    trace_id: t.traceId,
    updated_at: iso(t.updatedAt === null ? null : String(t.updatedAt)),
  };
}

/** A transfer's fee estimate; null before it was estimated. */
function feeView(t: TransferRecord): TransferView['fee'] {
  if (t.feeTotal === null) return null;
  return {
    total: formatUsdc(t.feeTotal),
    platform: formatUsdc(t.feePlatform ?? 0n),
    gas: formatUsdc(t.feeGas ?? 0n),
  };
}

/**
 * Whether every transfer that may still be sent (queued, held, in progress) has its fee estimate,
 * so that the planned fee and net are known: the batch's `unestimated` count is 0. A batch recorded
 * before that count existed is known once none of its transfers may still be sent.
 */
function feesKnown(b: Record<string, string>, counts: Record<TransferState, number>): boolean {
  const unestimated = b['unestimated'];
  if (unestimated !== undefined && /^-?[0-9]+$/.test(unestimated) && Number(unestimated) >= 0)
    return Number(unestimated) === 0;
  return counts.queued + counts.in_progress === 0;
}

/** A held batch's reason; one held by code that recorded none was held at the approval threshold. */
function heldReason(b: Record<string, string>): string | null {
  if (b['held'] !== '1') return null;
  return b['held_reason'] || 'APPROVAL_THRESHOLD_USDC: waiting for approval';
}

/** What the summary reads besides the batch record: its approvals and, while held, its digest. */
export type ApprovalFacts = { readonly approvals: Approval[]; readonly digest: string | null };

export function summarize(
  batchId: string,
  b: Record<string, string>,
  facts: ApprovalFacts = { approvals: [], digest: null },
): BatchSummary {
  const counts = {} as Record<TransferState, number>;
  for (const s of TRANSFER_STATES) counts[s] = Math.max(0, Number(b[`n_${s}`] ?? 0));
  const big = (v: string | undefined) => BigInt(v && /^-?[0-9]+$/.test(v) ? v : '0');
  const complete = b['complete'] === '1';
  const intents = intentCounts(b);
  const known = feesKnown(b, counts);
  return {
    batch_id: batchId,
    created_at: iso(b['created_at']),
    source: b['source'] ?? 'csv',
    submitted_by: b['submitted_by'] || null,
    complete,
    settled: isSettled(complete, intents),
    held: b['held'] === '1',
    held_reason: heldReason(b),
    approval_digest: b['held'] === '1' ? facts.digest : null,
    approvals: facts.approvals,
    approvals_required: Math.max(1, Number(b['approvals_required'] ?? 1) || 1),
    counts,
    intents,
    totals: {
      amount: formatUsdc(big(b['amount'])),
      fee: known ? formatUsdc(big(b['fee'])) : null,
      net_receive: known ? formatUsdc(big(b['net_receive'])) : null,
      paid: paidTotals(b),
    },
  };
}

export function createBatchReader(deps: { redis: Redis; prefix: string }) {
  const { redis } = deps;
  const k = keys(deps.prefix);

  /** The batches' summaries (those that exist), in the order asked: records and approvals in one pipeline. */
  async function summaries(ids: readonly string[]): Promise<BatchSummary[]> {
    if (ids.length === 0) return [];
    const pipe = redis.pipeline();
    for (const id of ids) pipe.hgetall(k.batch(id)).hgetall(k.batchApprovals(id));
    const res = (await pipe.exec()) ?? [];
    const out: BatchSummary[] = [];
    for (const [i, id] of ids.entries()) {
      const [errB, b] = res[2 * i] ?? [null, {}];
      const [errA, a] = res[2 * i + 1] ?? [null, {}];
      if (errB || errA) throw errB ?? errA;
      const record = b as Record<string, string>;
      if (!record['id']) continue;
      // The digest is read only while it may be approved: held, and every row written.
      const digest =
        record['held'] === '1' && record['enqueued'] === '1'
          ? await approvalDigestOf(redis, deps.prefix, id, record)
          : null;
      out.push(summarize(id, record, { approvals: approvalsOf(a as Record<string, string>), digest }));
    }
    return out;
  }

  async function loadTransfers(batchId: string, ids: string[]): Promise<TransferRecord[]> {
    if (ids.length === 0) return [];
    const pipe = redis.pipeline();
    for (const id of ids) pipe.hgetall(k.transfer(batchId, id));
    const res = (await pipe.exec()) ?? [];
    const out: TransferRecord[] = [];
    for (const [err, raw] of res) {
      if (err) throw err;
      const rec = parseTransferRecord(batchId, raw as Record<string, string>);
      if (rec) out.push(rec);
    }
    return out;
  }

  return {
    async summary(batchId: string): Promise<BatchSummary | undefined> {
      return (await summaries([batchId]))[0];
    },

    /** Recent batches, newest first. */
    async list(limit = 50): Promise<BatchSummary[]> {
      return await summaries(await redis.zrevrange(k.batches, 0, limit - 1));
    },

    /**
     * The status document; transfers in line order, optionally only one state, paged by line:
     * `cursor` is the last line of the previous page. Reads the batch's sorted sets, never scans jobs.
     */
    async status(
      batchId: string,
      options: { state?: TransferState; limit?: number; cursor?: string } = {},
    ): Promise<BatchStatus | undefined> {
      const [summary, pause, screening] = await Promise.all([
        this.summary(batchId),
        readPause(redis, deps.prefix),
        readScreening(redis, deps.prefix),
      ]);
      if (!summary) return undefined;
      const set = options.state ? k.batchState(batchId, options.state) : k.batchRows(batchId);
      const min = options.cursor ? `(${Number(options.cursor)}` : '-inf';
      const limit = options.limit ?? 0;
      const ids =
        limit > 0
          ? await redis.zrangebyscore(set, min, '+inf', 'LIMIT', 0, limit)
          : await redis.zrangebyscore(set, min, '+inf');
      const transfers = (await loadTransfers(batchId, ids)).map(transferView);
      const last = transfers[transfers.length - 1];
      const doc: BatchStatus = {
        ...summary,
        paused: pausedView(pause),
        transfers,
        screening: screeningView(screening, Date.now()),
      };
      if (limit > 0) doc.next_cursor = transfers.length === limit && last ? String(last.line) : null;
      return doc;
    },

    /** Every transfer, in line order, in pages (for export of large batches). */
    async *allTransfers(batchId: string, pageSize = 1_000): AsyncGenerator<TransferRecord[]> {
      let min = '-inf';
      for (;;) {
        const ids = await redis.zrangebyscore(k.batchRows(batchId), min, '+inf', 'LIMIT', 0, pageSize);
        if (ids.length === 0) return;
        const page = await loadTransfers(batchId, ids);
        yield page;
        const last = page[page.length - 1];
        if (ids.length < pageSize || !last) return;
        min = `(${last.line}`;
      }
    },
  };
}
export type BatchReader = ReturnType<typeof createBatchReader>;
