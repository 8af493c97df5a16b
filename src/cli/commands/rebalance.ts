import { ValidationError } from '../../domain/errors.ts';
import { formatUsdc } from '../../domain/money.ts';
import { FINAL_STATES, TRANSFER_STATES } from '../../domain/transfer.ts';
import { BatchConflictError } from '../../ingest/enqueue-batch.ts';
import { formatIssue } from '../../ingest/ingest-issue.ts';
import { createServiceClient } from '../../service/service-client.ts';
import { createBatchReader } from '../../present/batch-status.ts';
import { type BatchSummary } from '../../present/batch-summary.ts';
import { createLocalRateLimiter } from '../../store/rate-limiter.ts';
import { createCctpGate } from '../../store/cctp-gate.ts';
import { cctpFeeQuoterAt, type CctpRoad } from '../../service/cctp-fee-quote.ts';
import { BalanceReadError } from '../../treasury/balances.ts';
import { quoteEstimator, serviceEstimator, type FeeEstimator, type Plan } from '../../treasury/planner.ts';
import { readPolicyFile } from '../../treasury/policy.ts';
import {
  rebalanceDocument,
  rebalanceExit,
  runRebalance,
  type RebalanceMode,
  type RebalanceReport,
} from '../../treasury/rebalance-run.ts';
import { warnOnWorkerControls, withCli, type CliContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, plainText, table } from '../format.ts';
import { counted } from '../../domain/plural.ts';
import { parseOptions } from '../options.ts';

const REBALANCE_OPTIONS = { dryRun: 'flag', check: 'flag', wait: 'flag', json: 'flag' } as const;

const out = (s: string) => process.stdout.write(`${s}\n`);
const WAIT_POLL_MS = 500;

/**
 * `usdc-batch rebalance POLICY.yaml [--dry-run] [--check] [--wait] [--json]` (docs/rebalancing.md
 * ): exit 0 a plan was made (or nothing to do, or an earlier run is in flight), 1 a
 * chain stays below its min or a balance could not be read (with --wait: some move did not
 * succeed), 2 usage, configuration or policy error.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions(REBALANCE_OPTIONS, options);
  const { policy } = readPolicyFile(args[0]);
  const mode: RebalanceMode = flags.check ? 'check' : flags.dryRun ? 'dry-run' : 'run';
  // A policy whose moves take CCTP is estimated by Circle's fee route: the service is not asked.
  const onCctp = policy.via === 'cctp' || policy.via === 'cctp-fast';
  return await withCli({ service: mode !== 'check' && !onCctp }, async (ctx) => {
    if (mode === 'run') await warnOnWorkerControls(ctx);
    const client =
      mode === 'check' || ctx.config.transferApiUrl === undefined || ctx.config.transferApiKey === undefined
        ? undefined
        : createServiceClient({
            baseUrl: ctx.config.transferApiUrl as string,
            apiKey: ctx.config.transferApiKey!,
            connectTimeoutMs: ctx.config.serviceConnectTimeoutMs,
            responseTimeoutMs: ctx.config.serviceResponseTimeoutMs,
            logger: ctx.logger,
            beforeRequest: ctx.config.apiRateLimit
              ? (
                  (l) => () =>
                    l.take()
                )(createLocalRateLimiter(ctx.config.apiRateLimit))
              : undefined,
          });
    const estimate: FeeEstimator = client
      ? serviceEstimator(client)
      : () => Promise.reject(new Error('no estimate from the service (--check, or TRANSFER_API_URL unset)'));
    // Circle's fee route, through the workers' shared gate (its per-second limit and 429 pause).
    const gate = createCctpGate({ redis: ctx.redis, prefix: ctx.prefix });
    const cctpEstimate = (via: CctpRoad) => quoteEstimator(cctpFeeQuoterAt(ctx.config.cctpApiUrl, via, gate));
    let report: RebalanceReport;
    try {
      report = await runRebalance(
        {
          redis: ctx.redis,
          prefix: ctx.prefix,
          config: ctx.config,
          jobs: mode === 'run' ? await ctx.producer() : undefined,
          estimate,
          cctpEstimate,
          logger: ctx.logger,
        },
        policy,
        { mode, actor: ctx.actor },
      );
    } catch (err) {
      if (err instanceof BalanceReadError) {
        process.stderr.write(`${plainText(`error: ${err.shortMessage}`)}\n`);
        return EXIT.rejected;
      }
      if (err instanceof BatchConflictError) throw err;
      throw err;
    } finally {
      client?.close();
    }
    const code = rebalanceExit(report);
    if (!flags.wait || report.batchId === null || !report.created) {
      if (flags.json) out(jsonText(rebalanceDocument(report)));
      else printReport(report);
      return code;
    }
    if (!flags.json) printReport(report);
    const done = await waitForBatch(ctx, report.batchId);
    const unsuccessful = done.counts.failed + done.counts.rejected + done.counts.needs_review;
    if (flags.json) out(jsonText({ ...rebalanceDocument(report), status: done }));
    else
      out(
        `\nbatch ${report.batchId} complete: submitted ${done.counts.submitted}, failed ${done.counts.failed}, rejected ${done.counts.rejected}, needs review ${done.counts.needs_review}, cancelled ${done.counts.cancelled}`,
      );
    return unsuccessful > 0 ? EXIT.rejected : code;
  });
}

async function waitForBatch(ctx: CliContext, batchId: string): Promise<BatchSummary> {
  const reader = createBatchReader({ redis: ctx.redis, prefix: ctx.prefix });
  for (;;) {
    const b = await reader.summary(batchId);
    if (!b) throw new ValidationError('USDC_BATCH_NOT_FOUND', `batch ${batchId} disappeared while waiting`);
    if (b.complete) return b;
    if (process.stderr.isTTY) {
      const rows = TRANSFER_STATES.reduce((n, s) => n + b.counts[s], 0);
      const final = FINAL_STATES.reduce((n, s) => n + b.counts[s], 0);
      process.stderr.write(`\r${final}/${rows} final${b.held ? ' (held for approval)' : ''}`);
    }
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
}

/**
 * The chains that stay below their target once the moves have landed (the document's `short`),
 * each said for what it is: still below its min (what `rebalance` exists to fix, exit 1), or above
 * its min and only short of its target (nothing is wrong).
 */
export function shortLines(plan: Pick<Plan, 'chains' | 'short'>): string[] {
  return plan.short.map((s) => {
    const c = plan.chains.find((x) => x.chain === s.chain);
    const missing = formatUsdc(s.missing);
    const min = c?.min ?? null;
    const minText = min === null ? '' : ` ${formatUsdc(min)}`;
    if (c !== undefined && min !== null && c.after < min)
      return `short: ${s.chain} stays ${missing} below its target, below its min${minText}`;
    return `below target: ${s.chain} stays ${missing} below its target (above its min${minText})`;
  });
}

/** The text report: the chains, the moves, what was left out, what stays short, what happened. */
function printReport(r: RebalanceReport): void {
  const doc = rebalanceDocument(r);
  out(
    `policy ${r.policy}${r.mode === 'dry-run' ? ' (dry run: nothing is sent)' : r.mode === 'check' ? ' (check)' : ''}`,
  );
  if (r.via !== 'service' && r.mode !== 'check')
    out(
      `road ${r.via}: the fees are Circle's (its fee route, finality ${r.via === 'cctp-fast' ? 1000 : 2000}); the gas is paid by the owners in native gas on both chains, not in the fees`,
    );
  out('');
  out(
    table(
      ['chain', 'balance', 'incoming', 'outgoing', 'position', 'min', 'target', 'after', 'state'],
      doc.chains.map((c) => [
        c.chain,
        c.balance,
        c.incoming,
        c.outgoing,
        c.position,
        c.min,
        c.target,
        c.after,
        c.state.replace('_', ' '),
      ]),
    ),
  );
  if (r.mode === 'check') return;
  out('');
  if (doc.moves.length > 0) {
    out(
      table(
        ['move', 'from', 'to', 'amount', 'fee', 'net receive', 'recipient'],
        doc.moves.map((m) => [m.id, m.from, m.to, m.amount, m.fee, m.net_receive, m.recipient]),
      ),
    );
    const total = r.plan.moves.reduce((s, m) => s + m.amount, 0n);
    out(`${counted(doc.moves.length, 'move')}, ${formatUsdc(total)} USDC in all`);
  } else if (r.waitingFor === null) {
    out(
      r.plan.chains.some((c) => c.state === 'below_min')
        ? 'no move can be made: see what was left out and what is short'
        : 'nothing to do: no chain is below its min',
    );
  }
  for (const s of doc.skipped) out(`left out ${s.from} → ${s.to} ${s.amount}: ${s.reason}`);
  for (const line of shortLines(r.plan)) out(line);
  if (r.waitingFor !== null) {
    out(
      `an earlier run of policy ${r.policy} is in flight: batch ${r.waitingFor} is not settled yet${r.mode === 'run' ? '; nothing enqueued' : ''}`,
    );
  }
  if (r.outcome?.status === 'rejected') {
    out(`the moves were refused; nothing enqueued:`);
    for (const e of r.outcome.errors) out(`  ${formatIssue(e)}`);
  } else if (r.batchId !== null) {
    out(
      `${r.created ? 'enqueued' : 'already enqueued'} as batch ${r.batchId}${r.outcome?.held ? ` — held for approval: ${r.outcome.heldReason ?? ''} (usdc-batch approve ${r.batchId})` : ''}`,
    );
  }
}
