import type { Redis } from 'ioredis';
import {
  allTransfers,
  readBatchFacts,
  readTransferPage,
  recentBatchIds,
  type TransferPage,
} from '../store/batch-reader.ts';
import { readPause } from '../store/pause-flag.ts';
import { readScreening } from '../store/screening-state.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { pausedView, summaryView, type BatchSummary, type PausedView } from './batch-summary.ts';
import { screeningView, type ScreeningView } from './screening-view.ts';
import { transferView, type TransferView } from './transfer-view.ts';

/*
 * The status document of docs/http-api.md (`status --json`, `GET /v1/batches/:id`, callbacks), built
 * from the store's typed records by this presenter only; its JSON schema
 * (src/http/schemas/status-document.ts) is checked against these types.
 */

export type BatchStatus = BatchSummary & {
  /** Whether processing is paused now, for every batch (the status document's `paused`). */
  paused: PausedView | null;
  transfers: TransferView[];
  /** The sanctions lists the workers screen with (docs/screening.md). */
  screening: ScreeningView;
  next_cursor?: string | null;
};

export function createBatchReader(deps: { redis: Redis; prefix: string }) {
  const { redis, prefix } = deps;
  return {
    summary: (batchId: string) => summaryOf(redis, prefix, batchId),
    /** Recent batches, newest first. */
    list: async (limit = 50): Promise<BatchSummary[]> =>
      (await readBatchFacts(redis, prefix, await recentBatchIds(redis, prefix, limit))).map(summaryView),
    status: (batchId: string, page: TransferPage = {}) => statusOf(redis, prefix, batchId, page),
    /** Every transfer, in line order, in pages (for export of large batches). */
    allTransfers: (batchId: string, pageSize?: number): AsyncGenerator<TransferRecord[]> =>
      allTransfers(redis, prefix, batchId, pageSize),
  };
}
export type BatchReader = ReturnType<typeof createBatchReader>;

async function summaryOf(redis: Redis, prefix: string, batchId: string): Promise<BatchSummary | undefined> {
  const [facts] = await readBatchFacts(redis, prefix, [batchId]);
  return facts ? summaryView(facts) : undefined;
}

/**
 * The status document; transfers in line order, optionally only one state, paged by line:
 * `cursor` is the last line of the previous page.
 */
async function statusOf(
  redis: Redis,
  prefix: string,
  batchId: string,
  page: TransferPage,
): Promise<BatchStatus | undefined> {
  const [summary, pause, screening] = await Promise.all([
    summaryOf(redis, prefix, batchId),
    readPause(redis, prefix),
    readScreening(redis, prefix),
  ]);
  if (!summary) return undefined;
  const transfers = (await readTransferPage(redis, prefix, batchId, page)).map(transferView);
  const doc: BatchStatus = {
    ...summary,
    paused: pausedView(pause),
    transfers,
    screening: screeningView(screening, Date.now()),
  };
  const limit = page.limit ?? 0;
  const last = transfers[transfers.length - 1];
  if (limit > 0) doc.next_cursor = transfers.length === limit && last ? String(last.line) : null;
  return doc;
}
