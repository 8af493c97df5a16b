import type { Redis } from 'ioredis';
import { errorMessage } from '../domain/errors.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import { noteHeldFiring } from '../store/schedule-holds.ts';
import { BalanceReadError } from './balances.ts';
import type { FeeEstimator } from './planner.ts';
import { parsePolicy } from './policy.ts';
import { runRebalance, type RebalanceDeps } from './rebalance-run.ts';

/**
 * What a worker gives a rebalance schedule's firing: its configuration (keys, RPC), the service's
 * estimates and, where it runs the CCTP road, Circle's fee for a policy whose moves take it.
 */
export type RebalanceFiringDeps = {
  readonly config: RebalanceDeps['config'];
  readonly estimate: FeeEstimator;
  readonly cctpEstimate?: RebalanceDeps['cctpEstimate'];
};

export type FiringRequest = {
  readonly schedule: string;
  /** The firing's batch id (`NAME-YYYYMMDDTHHMMSSZ`). */
  readonly batchId: string;
  readonly policyText: string;
  readonly policyFile: string;
  readonly scheduledAt: number;
};

/**
 * A firing of `schedule add … --rebalance`: plans afresh from the balances of this moment with the
 * stored policy and enqueues the moves as the firing's batch, as `rebalance` would (one run in flight
 * per policy). Notes the outcome in the schedule's `last_*` fields. A balance that cannot be read
 * is thrown after the note, so the queue tries the firing again (the same batch id: never twice).
 * Returns what happened, for the log: `enqueued`, `held`, `exists`, `nothing`, `waiting`, `rejected`.
 */
export async function fireRebalance(
  deps: {
    readonly redis: Redis;
    readonly prefix: string;
    readonly jobs: TransferJobSink;
    readonly logger?: Logger | undefined;
    readonly rebalance?: RebalanceFiringDeps | undefined;
  },
  f: FiringRequest,
  note: (fields: Record<string, string>) => Promise<void>,
): Promise<string> {
  const last = (status: string, error = '', batch = f.batchId) =>
    note({ last_fired_at: String(f.scheduledAt), last_batch: batch, last_status: status, last_error: error });
  const parsed = parsePolicy(f.policyText, f.policyFile);
  if (!parsed.ok || !deps.rebalance) {
    const why = parsed.ok
      ? 'this worker cannot run rebalance schedules'
      : `policy: ${parsed.problems.join('; ')}`;
    deps.logger?.error({ schedule: f.schedule, batchId: f.batchId, why }, 'rebalance firing refused');
    await last('rejected', why.slice(0, 1000));
    return 'rejected';
  }
  let report;
  try {
    report = await runRebalance(
      { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs, logger: deps.logger, ...deps.rebalance },
      parsed.policy,
      { mode: 'run', actor: `schedule:${f.schedule}`, batchId: f.batchId },
    );
  } catch (err) {
    await last('error', errorMessage(err).slice(0, 1000));
    if (err instanceof BalanceReadError)
      deps.logger?.warn(
        { schedule: f.schedule, err: err.shortMessage },
        'rebalance firing: a balance cannot be read; will retry',
      );
    throw err;
  }
  if (report.waitingFor !== null) {
    await last('waiting', `an earlier run is in flight: ${report.waitingFor}`, '');
    return 'waiting';
  }
  if (report.outcome === null) {
    await last(
      'nothing',
      report.plan.skipped
        .map((s) => `${s.from}→${s.to}: ${s.reason}`)
        .join('; ')
        .slice(0, 1000),
      '',
    );
    return 'nothing';
  }
  const o = report.outcome;
  if (o.status === 'rejected') {
    await last(
      'rejected',
      o.errors
        .map((e) => e.message)
        .join('; ')
        .slice(0, 1000),
    );
    return 'rejected';
  }
  if (o.held) await noteHeldFiring(deps.redis, deps.prefix, f.schedule, f.batchId);
  deps.logger?.info(
    {
      schedule: f.schedule,
      batchId: f.batchId,
      moves: report.plan.moves.length,
      amount: formatUsdc(o.totalAmount),
      held: o.held,
    },
    'rebalance schedule fired',
  );
  await last(o.held ? 'held' : 'enqueued');
  return o.held ? 'held' : o.created ? 'enqueued' : 'exists';
}
