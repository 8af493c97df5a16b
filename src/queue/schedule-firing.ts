import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { formatUsdc } from '../domain/money.ts';
import { BatchConflictError, enqueueValidated, type EnqueueOutcome } from '../ingest/enqueue-batch.ts';
import type { HoldConfig } from '../ingest/hold-rules.ts';
import { formatIssue } from '../ingest/ingest-issue.ts';
import { bufferSource } from '../ingest/csv-source.ts';
import { validateCsv } from '../ingest/validate-input.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import { heldFirings, noteHeldFiring } from '../store/schedule-holds.ts';
import { noteScheduleFiring, readFiringSource } from '../store/schedule-records.ts';
import { fireRebalance, type RebalanceFiringDeps } from '../treasury/rebalance-firing.ts';
import { firingBatchId, isFiringOf, scopeToFiring } from './schedule-identity.ts';
import { counted } from '../domain/plural.ts';

export type FiringOutcome =
  | { readonly status: 'no_schedule'; readonly batchId: string }
  | { readonly status: 'conflict'; readonly batchId: string }
  | {
      readonly status: 'enqueued' | 'exists' | 'rejected';
      readonly batchId: string;
      readonly outcome: EnqueueOutcome;
    }
  /** A rebalance schedule's firing: what its run did (docs/rebalancing.md). */
  | { readonly status: 'rebalance'; readonly batchId: string; readonly result: string };

export type FireDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly jobs: TransferJobSink;
  readonly config: Pick<
    Config,
    | 'maxTransferUsdc'
    | 'maxBatchUsdc'
    | 'maxDailyUsdc'
    | 'callbackAllowedHosts'
    | 'approvalsRequired'
    | 'screeningOnchain'
    | 'auditLogFile'
    | 'screeningLists'
    | 'screeningMaxAgeMs'
    | 'screeningOnchain'
  > &
    HoldConfig;
  readonly logger?: Logger | undefined;
  /** What a rebalance schedule's firing needs (keys, RPC, the service's estimates); absent: such firings are refused. */
  readonly rebalance?: RebalanceFiringDeps | undefined;
};

/**
 * One firing: the stored CSV, validated again under today's limits, becomes the batch
 * `NAME-<scheduled time>` through the same path as `enqueue` (batch cap, approval holds, the
 * address book, audit); while an earlier firing is still held, this one is held too.
 * Rows with an id get payout ids scoped to the firing. Rows without one keep the likely-duplicate
 * rule against every other batch of the last 24 hours except the schedule's own firings — the
 * product's "other firings of the same schedule aside" — rather than `--allow-duplicates`, which
 * would also let a firing repeat a payment a person just enqueued by hand.
 */
export async function fireSchedule(
  deps: FireDeps,
  name: string,
  scheduledAt: number,
): Promise<FiringOutcome> {
  const batchId = firingBatchId(name, scheduledAt);
  const { csv, policy, policyFile } = await readFiringSource(deps.redis, deps.prefix, name);
  const note = (fields: Record<string, string>) => noteScheduleFiring(deps.redis, deps.prefix, name, fields);
  if (policy) {
    const result = await fireRebalance(
      { ...deps, rebalance: deps.rebalance },
      { schedule: name, batchId, policyText: policy, policyFile: policyFile ?? name, scheduledAt },
      note,
    );
    return { status: 'rebalance', batchId, result };
  }
  if (csv === null) return { status: 'no_schedule', batchId };
  return fireCsvSchedule(deps, { name, batchId, scheduledAt, csv }, note);
}

/** A CSV schedule's firing: the stored file becomes the batch (see fireSchedule). */
async function fireCsvSchedule(
  deps: FireDeps,
  f: { name: string; batchId: string; scheduledAt: number; csv: string },
  note: (fields: Record<string, string>) => Promise<void>,
): Promise<FiringOutcome> {
  const { name, batchId, scheduledAt, csv } = f;
  const input = await validateCsv(bufferSource(Buffer.from(csv, 'utf8')), {
    maxTransferUsdc: deps.config.maxTransferUsdc,
  });
  const earlier = await heldFirings(deps.redis, deps.prefix, name, { except: batchId });
  let outcome: EnqueueOutcome;
  try {
    outcome = await enqueueValidated(
      { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs, config: deps.config },
      scopeToFiring(input, batchId),
      {
        source: 'schedule',
        actor: `schedule:${name}`,
        batchId,
        sameFamily: (b) => isFiringOf(name, b),
        holdReasons:
          earlier.length > 0
            ? [
                `schedule ${name}: an earlier firing is still held (${earlier.slice(0, 3).join(', ')}${earlier.length > 3 ? ', …' : ''})`,
              ]
            : undefined,
      },
    );
  } catch (err) {
    if (!(err instanceof BatchConflictError)) throw err;
    // The schedule was replaced while an earlier attempt of this firing had started its batch:
    // that batch stands, and this firing adds nothing (retrying would conflict again).
    deps.logger?.error(
      { schedule: name, batchId },
      'schedule firing conflicts with an existing batch; nothing added',
    );
    await note({
      last_fired_at: String(scheduledAt),
      last_batch: batchId,
      last_status: 'conflict',
      last_error: err.shortMessage,
    });
    return { status: 'conflict', batchId };
  }
  if (outcome.status === 'rejected') {
    const shown = outcome.errors.slice(0, 5).map(formatIssue);
    deps.logger?.error(
      { schedule: name, batchId, problems: outcome.errorCount, first: shown },
      'schedule firing refused: no batch was enqueued',
    );
    await note({
      last_fired_at: String(scheduledAt),
      last_batch: batchId,
      last_status: 'rejected',
      last_error: `${counted(outcome.errorCount, 'problem')}; ${shown.join('; ')}`.slice(0, 1000),
    });
    return { status: 'rejected', batchId, outcome };
  }
  if (outcome.held) await noteHeldFiring(deps.redis, deps.prefix, name, batchId);
  deps.logger?.info(
    {
      schedule: name,
      batchId,
      created: outcome.created,
      rows: outcome.accepted,
      amount: formatUsdc(outcome.totalAmount),
      held: outcome.held,
    },
    outcome.created ? 'schedule fired: batch enqueued' : 'schedule firing already enqueued',
  );
  await note({
    last_fired_at: String(scheduledAt),
    last_batch: batchId,
    last_status: outcome.held ? 'held' : 'enqueued',
    last_error: '',
  });
  return { status: outcome.created ? 'enqueued' : 'exists', batchId, outcome };
}
