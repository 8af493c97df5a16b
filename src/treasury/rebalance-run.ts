import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { bookAddressOf } from '../domain/recipient-key.ts';
import { formatUsdc } from '../domain/money.ts';
import type { Chain } from '../domain/chains.ts';
import type { TransferRoad } from '../domain/roads.ts';
import type { CctpRoad } from '../service/cctp-fee-quote.ts';
import { enqueueValidated, type EnqueueOutcome } from '../ingest/enqueue-batch.ts';
import type { HoldConfig } from '../ingest/hold-rules.ts';
import type { ValidatedInput } from '../ingest/validate-input.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import { createBatchReader } from '../present/batch-status.ts';
import { lastRebalanceBatch, noteRebalanceBatch, takeRebalanceLock } from '../store/treasury-flows.ts';
import {
  readTreasuryBalances,
  treasuryAddresses,
  type BalanceOptions,
  type TreasuryAddresses,
  type TreasuryConfig,
} from './balances.ts';
import { chainsAfter, planRebalance, type FeeEstimator, type Plan, type PlannedMove } from './planner.ts';
import type { RebalancePolicy } from './policy.ts';
import { treasuryPositions, type TreasuryPosition } from './positions.ts';

/**
 * One rebalancing run (docs/rebalancing.md): balances read now, positions from the store,
 * the plan, and — unless it is a dry run or a check — the moves enqueued as one ordinary batch
 * through the same path as `enqueue` (fee guard, limits, approval holds, audit), the treasury's own
 * addresses counting as known recipients. One run in flight per policy: while the policy's last
 * batch is not settled (not complete, where the service has no status route) a run enqueues
 * nothing and names it; a lock on the policy makes runs started at the same instant decide one
 * after the other, so they make one batch.
 */

export type RebalanceMode = 'run' | 'dry-run' | 'check';

export type RebalanceDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig &
    Pick<
      Config,
      | 'maxFeeBps'
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
      | 'transferVia'
    > &
    HoldConfig;
  /** Where the batch's transfer jobs go; needed for `run` only. */
  readonly jobs?: TransferJobSink | undefined;
  /** The service's estimates (the service road). */
  readonly estimate: FeeEstimator;
  /** Circle's fee on a CCTP road (docs/cctp.md "Dry run and plan"); absent: such a policy cannot plan. */
  readonly cctpEstimate?: ((via: CctpRoad) => FeeEstimator) | undefined;
  readonly logger?: Logger | undefined;
  readonly now?: () => number;
  readonly balances?: BalanceOptions;
};

export type RebalanceOptions = {
  readonly mode: RebalanceMode;
  /** Who asked (audit log): `cli:<os user>` or `schedule:<name>`. */
  readonly actor: string;
  /** The batch id to use (a schedule's firing id); default `rebalance-<name>-<YYYYMMDDTHHMMSSZ>`. */
  readonly batchId?: string | undefined;
  /** How long a run waits for a run of the same policy that is deciding (default 60 s). */
  readonly lockWaitMs?: number | undefined;
};

export type RebalanceReport = {
  readonly policy: string;
  /** The road of the moves: the policy's `via`, or TRANSFER_VIA. */
  readonly via: TransferRoad;
  readonly mode: RebalanceMode;
  readonly batchId: string | null;
  readonly created: boolean;
  readonly waitingFor: string | null;
  readonly positions: readonly TreasuryPosition[];
  readonly plan: Plan;
  /** The enqueue's answer when moves were handed to it. */
  readonly outcome: EnqueueOutcome | null;
};

const LOCK_TTL_MS = 120_000;

/** `rebalance-<name>-<YYYYMMDDTHHMMSSZ>` (UTC). */
export function rebalanceBatchId(name: string, at: number): string {
  const iso = new Date(at).toISOString();
  return `rebalance-${name}-${iso.slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/**
 * The policy's last batch while it is not settled (where the service has no status route for one
 * of its intents: while it is not complete); null when there is none.
 */
export async function runInFlight(redis: Redis, prefix: string, policy: string): Promise<string | null> {
  const last = await lastRebalanceBatch(redis, prefix, policy);
  if (last === null) return null;
  const summary = await createBatchReader({ redis, prefix }).summary(last);
  if (!summary) return null;
  const done = summary.settled === null ? summary.complete : summary.settled;
  return done ? null : last;
}

/** Where each chain's move is paid: the EVM owner holding least there (first on a tie), the Solana keypair. */
export function moveRecipients(
  addresses: TreasuryAddresses,
  positions: readonly TreasuryPosition[],
): Partial<Record<Chain, string>> {
  const out: Partial<Record<Chain, string>> = {};
  for (const p of positions) {
    if (p.chain === 'SOLANA') {
      if (addresses.solana) out.SOLANA = addresses.solana.address;
      continue;
    }
    let least: { address: string; balance: bigint } | undefined;
    for (const o of p.owners) if (least === undefined || o.balance < least.balance) least = o;
    if (least) out[p.chain] = least.address;
  }
  return out;
}

/** The moves as validated rows: ids `rb-FROM-TO`, lines in plan order. */
function movesInput(moves: readonly PlannedMove[]): ValidatedInput {
  return {
    transfers: moves.map((m, i) => ({
      id: m.id,
      hasPayoutId: false,
      line: i + 1,
      from: m.from,
      to: m.to,
      amount: m.amount,
      recipient: m.recipient,
      memo: null,
    })),
    issues: [],
    omittedIssues: 0,
    invalidRows: 0,
    duplicates: [],
    omittedDuplicates: 0,
    fatal: false,
    refusal: null,
    inputRows: moves.length,
    inputTotal: moves.reduce((s, m) => s + m.amount, 0n),
  };
}

/** Book keys of the treasury's own addresses on each chain (always known recipients). */
export function ownBookKeys(addresses: TreasuryAddresses): Set<string> {
  const keys = new Set<string>();
  for (const o of addresses.evmOwners) keys.add(bookAddressOf({ to: 'ETH', recipient: o }).key);
  if (addresses.solana) keys.add(bookAddressOf({ to: 'SOLANA', recipient: addresses.solana.address }).key);
  return keys;
}

async function planNow(
  deps: RebalanceDeps,
  policy: RebalancePolicy,
  addresses: TreasuryAddresses,
  withMoves: boolean,
): Promise<{ positions: TreasuryPosition[]; plan: Plan }> {
  const chains = policy.chains.map((c) => c.chain);
  const balances = await readTreasuryBalances(deps.config, addresses, chains, deps.balances);
  const positions = await treasuryPositions(
    {
      redis: deps.redis,
      prefix: deps.prefix,
      config: deps.config,
      ...(deps.balances?.fetch ? { fetch: deps.balances.fetch } : {}),
    },
    addresses,
    balances,
  );
  if (!withMoves)
    return { positions, plan: { ...chainsAfter(policy.chains, positions), moves: [], skipped: [] } };
  const plan = await planRebalance({
    policy,
    maxFeeBps: policy.maxFeeBps ?? deps.config.maxFeeBps,
    positions,
    recipients: moveRecipients(addresses, positions),
    estimate: roadEstimator(deps, roadOf(deps, policy)),
  });
  return { positions, plan };
}

/** The road of a policy's moves: its `via`, or TRANSFER_VIA. */
export function roadOf(deps: Pick<RebalanceDeps, 'config'>, policy: RebalancePolicy): TransferRoad {
  return policy.via ?? deps.config.transferVia;
}

/**
 * The estimator of the road: the service's, or on a CCTP road Circle's fee route (the fee Circle's,
 * the gas the owners'). A CCTP road without one estimates nothing: every move is left out, saying so.
 */
function roadEstimator(deps: RebalanceDeps, via: TransferRoad): FeeEstimator {
  if (via === 'service') return deps.estimate;
  if (deps.cctpEstimate) return deps.cctpEstimate(via);
  return () => Promise.reject(new Error(`no estimator for the ${via} road (CCTP_API_URL) in this process`));
}

/**
 * Runs the policy once. Throws BalanceReadError when a chain's balance cannot be read (nothing is
 * planned), BatchConflictError when the batch id is taken by other content.
 */
export async function runRebalance(
  deps: RebalanceDeps,
  policy: RebalancePolicy,
  options: RebalanceOptions,
): Promise<RebalanceReport> {
  const now = deps.now ?? Date.now;
  const addresses = await treasuryAddresses({ config: deps.config, redis: deps.redis, prefix: deps.prefix });
  const report = (
    r: Pick<RebalanceReport, 'positions' | 'plan'> & Partial<RebalanceReport>,
  ): RebalanceReport => ({
    policy: policy.name,
    via: roadOf(deps, policy),
    mode: options.mode,
    batchId: null,
    created: false,
    waitingFor: null,
    outcome: null,
    ...r,
  });
  if (options.mode === 'check') return report(await planNow(deps, policy, addresses, false));
  if (options.mode === 'dry-run') {
    const waitingFor = await runInFlight(deps.redis, deps.prefix, policy.name);
    return report({ ...(await planNow(deps, policy, addresses, true)), waitingFor });
  }

  const release = await takeRebalanceLock(deps.redis, deps.prefix, policy.name, {
    ttlMs: LOCK_TTL_MS,
    waitMs: options.lockWaitMs ?? 60_000,
  });
  if (!release) {
    throw new Error(`another run of policy ${policy.name} is still deciding; try again in a minute`);
  }
  try {
    const waitingFor = await runInFlight(deps.redis, deps.prefix, policy.name);
    if (waitingFor !== null) {
      deps.logger?.info(
        { policy: policy.name, waitingFor },
        'rebalance: an earlier run is in flight; nothing enqueued',
      );
      return report({ ...(await planNow(deps, policy, addresses, false)), waitingFor });
    }
    const planned = await planNow(deps, policy, addresses, true);
    if (planned.plan.moves.length === 0) return report(planned);
    if (!deps.jobs) throw new Error('runRebalance needs a job sink to enqueue');
    const batchId = options.batchId ?? rebalanceBatchId(policy.name, now());
    const outcome = await enqueueValidated(
      { redis: deps.redis, prefix: deps.prefix, jobs: deps.jobs, config: deps.config, now },
      movesInput(planned.plan.moves),
      {
        source: 'rebalance',
        actor: options.actor,
        batchId,
        ...(policy.via !== null ? { via: policy.via } : {}),
        ownAddresses: ownBookKeys(addresses),
        // A move that repeats an earlier one (same route, amount and treasury address) is a new
        // need read from the balances, not a duplicate row: what keeps a deficit from being served
        // twice is the one-run-in-flight rule above.
        allowDuplicates: true,
      },
    );
    if (outcome.status === 'enqueued')
      await noteRebalanceBatch(deps.redis, deps.prefix, policy.name, { id: batchId, at: now() });
    deps.logger?.info(
      {
        policy: policy.name,
        batchId,
        status: outcome.status,
        moves: planned.plan.moves.length,
        amount: formatUsdc(outcome.totalAmount),
        held: outcome.held,
      },
      outcome.status === 'enqueued' ? 'rebalance: moves enqueued' : 'rebalance: moves refused',
    );
    return report({
      ...planned,
      batchId: outcome.status === 'enqueued' ? batchId : null,
      created: outcome.created,
      outcome,
    });
  } finally {
    await release();
  }
}

/** The `rebalance --json` document (docs/rebalancing.md). */
export function rebalanceDocument(r: RebalanceReport) {
  const amount = (v: bigint) => formatUsdc(v);
  const doc = {
    policy: r.policy,
    via: r.via,
    // Who pays the chains' gas: the service (its fee includes it) or, on a CCTP road, each owner.
    gas_paid_by: r.via === 'service' ? 'service' : 'owner',
    batch_id: r.batchId,
    created: r.created,
    waiting_for: r.waitingFor,
    chains: r.plan.chains.map((c) => ({
      chain: c.chain,
      balance: amount(c.balance),
      incoming: amount(c.incoming),
      outgoing: amount(c.outgoing),
      position: amount(c.position),
      min: c.min === null ? null : amount(c.min),
      target: amount(c.target),
      after: amount(c.after),
      state: c.state,
    })),
    moves: r.plan.moves.map((m) => ({
      id: m.id,
      from: m.from,
      to: m.to,
      amount: amount(m.amount),
      fee: amount(m.fee),
      net_receive: amount(m.netReceive),
      recipient: m.recipient,
    })),
    skipped: r.plan.skipped.map((s) => ({
      from: s.from,
      to: s.to,
      amount: amount(s.amount),
      reason: s.reason,
    })),
    short: r.plan.short.map((s) => ({ chain: s.chain, missing: amount(s.missing) })),
  };
  if (r.outcome && r.outcome.status === 'rejected') {
    return { ...doc, errors: r.outcome.errors, error_count: r.outcome.errorCount };
  }
  if (r.outcome?.held) return { ...doc, held: true, held_reason: r.outcome.heldReason };
  return doc;
}

/**
 * The exit code of a run (docs/rebalancing.md, docs/exit-codes.md): 1 when the moves were refused or some chain's `after` stays
 * below its min (for `--check`: its position), else 0 — also when an earlier run is in flight.
 */
export function rebalanceExit(r: RebalanceReport): 0 | 1 {
  if (r.outcome?.status === 'rejected') return 1;
  if (r.waitingFor !== null && r.mode !== 'check') return 0;
  const below = r.plan.chains.some(
    (c) => c.min !== null && (r.mode === 'check' ? c.position : c.after) < c.min,
  );
  return below ? 1 : 0;
}
