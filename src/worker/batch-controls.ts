import type { Redis } from 'ioredis';
import { controlDigestOf, type ControlConfig } from '../config/control-settings.ts';
import type { Chain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { bookAddressOf } from '../domain/recipient-key.ts';
import { decideHolds, screenRecipients, type HoldConfig, type Payee } from '../ingest/hold-rules.ts';
import type { Logger } from '../log/logger.ts';
import type { ControlsVerdict, WorkerControls } from '../pipeline/pipeline-deps.ts';
import { holdBatch } from '../store/batch-hold.ts';
import { readBatch, type Batch } from '../store/batch-record.ts';
import { readControlMarks, recordControlsChecked, type ControlMarks } from '../store/batch-control-marks.ts';
import { transfersInState } from '../store/queued-transfers.ts';

/*
 * The worker's own controls over a batch (docs/promises.md, promise 5; src/pipeline/worker-controls.ts).
 * A batch records the digest of the controls it was enqueued under (`controls`): when it is this
 * worker's, the enqueue applied the same rules and nothing more is read. Otherwise the worker judges
 * the batch's unsent rows once with its own controls — what enqueue would have decided — holds the
 * batch when they would, and records the digest it judged under (`controls_checked`, and a refusal
 * of the whole batch in `controls_refusal`), so the batch's other transfers read one field.
 */

type Deps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: ControlConfig & HoldConfig;
  readonly logger: Logger;
  readonly now?: () => number;
};

export function createWorkerControls(deps: Deps): WorkerControls {
  const digest = controlDigestOf(deps.config);
  return {
    maxTransferUsdc: deps.config.maxTransferUsdc,
    check: (batchId, marks) => checkBatch(deps, digest, batchId, marks),
  };
}

/** From the marks (read now unless the run read them), or by judging the batch (`judged`). */
async function checkBatch(
  deps: Deps,
  digest: string,
  batchId: string,
  read?: ControlMarks,
): Promise<ControlsVerdict> {
  const marks = read ?? (await readControlMarks(deps.redis, deps.prefix, batchId));
  if (marks.controls === digest) return {};
  if (marks.checked === digest) return marks.refusal ? { refusal: marks.refusal } : {};
  const judged = await judgeBatch(deps, batchId);
  if (judged.final) {
    await recordControlsChecked(deps.redis, deps.prefix, batchId, digest, judged.verdict.refusal ?? null);
  }
  return { ...judged.verdict, judged: true };
}

/**
 * What this worker's controls say of the batch. `final` false: the batch is held (its approval
 * will be judged when it is released), or gone — nothing is recorded, it is judged again then.
 */
async function judgeBatch(
  deps: Deps,
  batchId: string,
): Promise<{ readonly verdict: ControlsVerdict; readonly final: boolean }> {
  const { redis, prefix, config } = deps;
  const b = await readBatch(redis, prefix, batchId);
  if (!b) return { verdict: {}, final: false };
  const cap = config.maxBatchUsdc;
  const amount = b.amount;
  // A limit no approval lifts: the whole batch is refused, as enqueue would have refused it.
  if (cap !== undefined && amount > cap) {
    const message = `batch total ${formatUsdc(amount)} is above the worker's MAX_BATCH_USDC (${formatUsdc(cap)})`;
    return { verdict: { refusal: { code: 'over_max_batch', message } }, final: true };
  }
  if (b.held) return { verdict: {}, final: false };
  // Its rows are judged whole: while the enqueue is still writing them, the transfer waits.
  if (!b.enqueued) {
    return {
      verdict: { wait: 'its batch is still being enqueued (judged whole by this worker’s controls)' },
      final: false,
    };
  }
  if (b.approvedAt !== null) {
    await requireApprovals(deps, batchId, b);
    return { verdict: {}, final: true };
  }
  const rows = await unsentRows(redis, prefix, batchId);
  if (rows.length === 0) return { verdict: {}, final: true };
  // A rebalancing batch pays only the treasury's own addresses: always known recipients.
  const own = b.source === 'rebalance' ? new Set(rows.map((r) => bookAddressOf(r).key)) : undefined;
  const screen = await screenRecipients(redis, prefix, rows, { own, submitter: b.submittedBy ?? undefined });
  const decision = await decideHolds({ redis, prefix, config, now: (deps.now ?? Date.now)() }, rows, screen, {
    batchId,
    member: batchId,
    recheck: true,
  });
  if (decision.reasons.length > 0) {
    const reason = `held by the worker's controls: ${decision.reasons.join('; ')}`;
    await holdBatch(redis, prefix, batchId, reason, config.approvalsRequired);
    deps.logger.warn(
      { batchId, reason },
      'batch held by the worker: its controls differ from the enqueuer’s',
    );
  }
  return { verdict: {}, final: true };
}

/**
 * A batch an approval released: approved by fewer names than this worker's APPROVALS_REQUIRED, it
 * is held again until the missing approvals are given (the approvals of the new hold count anew).
 */
async function requireApprovals(deps: Deps, batchId: string, b: Batch): Promise<void> {
  const given = b.approvedBy.length;
  const required = deps.config.approvalsRequired;
  if (given >= required) return;
  const reason = `held by the worker's controls: APPROVALS_REQUIRED is ${required}, and ${given} approved the batch`;
  await holdBatch(deps.redis, deps.prefix, batchId, reason, required);
  deps.logger.warn({ batchId, reason }, 'batch held by the worker: its controls differ from the enqueuer’s');
}

/** The batch's rows that may still be sent: `queued` and `in_progress`. */
async function unsentRows(redis: Redis, prefix: string, batchId: string): Promise<Payee[]> {
  const rows: Payee[] = [];
  for (const state of ['queued', 'in_progress'] as const) {
    for await (const page of transfersInState(redis, prefix, { batchId, state }, FIELDS)) {
      for (const { id, values } of page) {
        const [line, to, recipient, amount] = values;
        if (!to || !recipient || !amount || !/^[0-9]+$/.test(amount)) continue;
        rows.push({ id, line: Number(line ?? 0), to: to as Chain, recipient, amount: BigInt(amount) });
      }
    }
  }
  return rows.sort((a, b) => a.line - b.line);
}
const FIELDS = ['line', 'to', 'recipient', 'amount'];
