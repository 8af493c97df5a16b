import type { Redis } from 'ioredis';
import type { TransferState } from '../domain/transfer.ts';
import { approvalDigestOf, approvalsOf, type Approval } from './approvals.ts';
import { parseBatch, type Batch } from './batch-record.ts';
import { keys } from './keys.ts';
import { parseTransferRecord, type TransferRecord } from './transfer-record.ts';
import { hashReply } from './hash-reply.ts';

/*
 * Reads of batches and their transfers, as typed records (batch-record.ts, transfer-record.ts).
 * What a reader shows of them — the status document, a page, a job's result — is built from these
 * by src/present.
 */

/** A batch with what its summary reads besides the record: its approvals and, while held, its digest. */
export type BatchFacts = {
  readonly batch: Batch;
  readonly approvals: Approval[];
  /** While held and every row written: the approval digest (approvals.ts); else null. */
  readonly digest: string | null;
};

/** The batches (those that exist), in the order asked: records and approvals in one pipeline. */
export async function readBatchFacts(
  redis: Redis,
  prefix: string,
  ids: readonly string[],
): Promise<BatchFacts[]> {
  if (ids.length === 0) return [];
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hgetall(k.batch(id)).hgetall(k.batchApprovals(id));
  const res = (await pipe.exec()) ?? [];
  const out: BatchFacts[] = [];
  for (const [i, id] of ids.entries()) {
    const [errB, b] = res[2 * i] ?? [null, {}];
    const [errA, a] = res[2 * i + 1] ?? [null, {}];
    if (errB || errA) throw errB ?? errA;
    const batch = parseBatch(hashReply(`batch ${id}`, b));
    if (!batch) continue;
    // The digest is read only while it may be approved: held, and every row written.
    const digest = batch.held && batch.enqueued ? await approvalDigestOf(redis, prefix, id, batch) : null;
    out.push({ batch, approvals: approvalsOf(hashReply(`approvals of batch ${id}`, a)), digest });
  }
  return out;
}

/** The ids of the most recent batches, newest first. */
export async function recentBatchIds(redis: Redis, prefix: string, limit: number): Promise<string[]> {
  return await redis.zrevrange(keys(prefix).batches, 0, limit - 1);
}

/** Which of a batch's transfers a page holds: one state or all, after `cursor` (a line), at most `limit` (0: all). */
export type TransferPage = {
  readonly state?: TransferState;
  readonly limit?: number;
  readonly cursor?: string;
};

/** A page of the batch's transfers in line order. Reads the batch's sorted sets, never scans jobs. */
export async function readTransferPage(
  redis: Redis,
  prefix: string,
  batchId: string,
  page: TransferPage,
): Promise<TransferRecord[]> {
  const k = keys(prefix);
  const set = page.state ? k.batchState(batchId, page.state) : k.batchRows(batchId);
  const min = page.cursor ? `(${Number(page.cursor)}` : '-inf';
  const limit = page.limit ?? 0;
  const ids =
    limit > 0
      ? await redis.zrangebyscore(set, min, '+inf', 'LIMIT', 0, limit)
      : await redis.zrangebyscore(set, min, '+inf');
  return await readTransfers(redis, prefix, batchId, ids);
}

/** Every transfer, in line order, in pages (for export of large batches). */
export async function* allTransfers(
  redis: Redis,
  prefix: string,
  batchId: string,
  pageSize = 1_000,
): AsyncGenerator<TransferRecord[]> {
  let min = '-inf';
  for (;;) {
    const ids = await redis.zrangebyscore(keys(prefix).batchRows(batchId), min, '+inf', 'LIMIT', 0, pageSize);
    if (ids.length === 0) return;
    const page = await readTransfers(redis, prefix, batchId, ids);
    yield page;
    const last = page[page.length - 1];
    if (ids.length < pageSize || !last) return;
    min = `(${last.line}`;
  }
}

async function readTransfers(
  redis: Redis,
  prefix: string,
  batchId: string,
  ids: string[],
): Promise<TransferRecord[]> {
  if (ids.length === 0) return [];
  const k = keys(prefix);
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hgetall(k.transfer(batchId, id));
  const res = (await pipe.exec()) ?? [];
  const out: TransferRecord[] = [];
  for (const [err, raw] of res) {
    if (err) throw err;
    const rec = parseTransferRecord(batchId, hashReply(`a transfer of batch ${batchId}`, raw));
    if (rec) out.push(rec);
  }
  return out;
}
