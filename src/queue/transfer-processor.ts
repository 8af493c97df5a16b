import { DelayedError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Chain } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobMetrics } from '../metrics/worker-metrics.ts';
import { abandonTransfer } from '../pipeline/abandon.ts';
import { policyOf } from '../pipeline/policy.ts';
import { deferredWrites, type DeferredWrites } from '../pipeline/deferred-writes.ts';
import { runTransfer, type PipelineDeps, type StepOutcome } from '../pipeline/run-transfer.ts';
import { jobReportSink, writeJobResult } from './job-hash.ts';
import { jobOutcome, type JobOutcome } from '../present/transfer-view.ts';
import { failedReasonOf, failsJob, finalFailure } from './job-outcome.ts';
import { createJobReporter, type JobReporter } from './job-reporter.ts';
import { isSettleJob, parseTransferJobData, roundOfJobId, type TransferJobData } from './jobs.ts';
import type { RunSpans, TransferSpans } from './run-spans.ts';
import { runRecordOf, savedSteps } from '../store/saved-steps.ts';

/** What the processor of one source chain's transfer jobs runs on (transfer-workers.ts wires it). */
export type TransferProcessorDeps = {
  readonly source: Chain;
  readonly pipeline: PipelineDeps;
  readonly logger: Logger;
  /** The shared client: writes a failed job's result into its hash. */
  readonly redis: Redis;
  readonly metrics?: TransferJobMetrics | undefined;
  /** Aborted when the worker stops: in-flight waits park their jobs. */
  readonly shutdown: AbortSignal;
  /** With tracing on: each run's spans in its transfer's trace (run-spans.ts). */
  readonly spans?: TransferSpans | undefined;
};

type Done = StepOutcome & { kind: 'done' };

/**
 * One transfer job: runs the pipeline with the job's log as its reporter, then ends the job as the
 * transfer ended — completed with the outcome object (`submitted`, or `queued` when it went back to
 * wait for an approval), or failed for good (UnrecoverableError) with the outcome written to the
 * hash first (`failed`, `rejected`, `needs_review`), or handed back to the queue (a wait).
 */
export async function processTransferJob(
  deps: TransferProcessorDeps,
  job: Job,
  token?: string,
): Promise<JobOutcome> {
  const data = parseTransferJobData(job.data);
  if (!data) {
    deps.logger.error({ jobId: job.id, queue: job.queueName }, 'job data is not a transfer pointer');
    throw finalFailure('invalid: job data is not a transfer pointer ({batchId, transferId})');
  }
  const reporter = createJobReporter(job, jobReportSink(deps.redis, job), deps.logger);
  // Tracing never stops a payment: a run whose trace cannot be read or begun runs untraced.
  const spans = await deps.spans?.startRun(job, data, deps.source).catch(() => undefined);
  try {
    return await runJob(deps, job, token, { data, reporter, spans });
  } catch (err) {
    if (!(err instanceof DelayedError)) spans?.failed(err);
    throw err;
  }
}

/** The run and the job's end (processTransferJob), with its spans when tracing is on. */
async function runJob(
  deps: TransferProcessorDeps,
  job: Job,
  token: string | undefined,
  with_: {
    readonly data: TransferJobData;
    readonly reporter: JobReporter;
    readonly spans: RunSpans | undefined;
  },
): Promise<JobOutcome> {
  const { data, reporter, spans } = with_;
  // The run's last writes (its intent followed) go with the job's step log: one round trip.
  const deferred = deferredWrites();
  const run = () =>
    runTransfer(deps.pipeline, data.batchId, data.transferId, {
      signal: deps.shutdown,
      settleOnly: isSettleJob(job.name),
      report: spans ? spans.reporting(reporter.report) : reporter.report,
      deferred,
    });
  let out: StepOutcome;
  try {
    out = spans ? await spans.within(run) : await run();
  } catch (err) {
    // The run's error is what the job reports; a deferred write that failed too is made again
    // when the job runs again (run-transfer.ts followedAgain).
    await Promise.all([reporter.flush(), deferred.settled().catch(() => {})]);
    out = await afterUnexpectedError(deps, job, data, err);
  }
  if (out.kind === 'later') {
    reporter.waiting(out.reason, out.delayMs);
    spans?.handedBack(out.reason);
    deps.metrics?.waited(deps.source, out.wait);
    await Promise.all([reporter.flush(), deferred.settled()]);
    await job.moveToDelayed(Date.now() + Math.max(0, out.delayMs), token);
    throw new DelayedError(out.reason);
  }
  if (spans) {
    spans.ended(
      out.record ? jobOutcome(out.record) : { state: out.state, error: null, intent_id: null, attempts: 0 },
    );
  }
  return await endJob(deps, job, out, { reporter, deferred });
}

/**
 * An unexpected error (a bug, Redis trouble) goes back to the queue's retries, but not for ever:
 * past the transient deadline the transfer is made final from its saved steps (promise 2).
 */
async function afterUnexpectedError(
  deps: TransferProcessorDeps,
  job: Job,
  data: TransferJobData,
  err: unknown,
): Promise<Done> {
  const rec = await deps.pipeline.store.load(data.batchId, data.transferId).catch(() => undefined);
  const first = (rec ? savedSteps(rec).firstSeenAt : null) ?? Date.now();
  const budget = policyOf(deps.pipeline).transientDeadlineMs + 30_000;
  if (!rec || Date.now() - first <= budget) throw err;
  const message = (err as Error).message?.slice(0, 200) ?? String(err);
  const out = await abandonTransfer(deps.pipeline, runRecordOf(rec), {
    reason: `kept failing with an unexpected error: ${message}`,
    jobRound: roundOfJobId(job.id),
  });
  if (!out) throw err;
  return out;
}

/** The line that closes a job's log: what the transfer's state means. */
function closingLine(o: JobOutcome, waitReason: string | null): string {
  switch (o.state) {
    case 'submitted':
      // The answer's line names the intent (and the result holds it with the tx): not said twice.
      return `fee ${o.fee?.total ?? '?'} USDC, intent ${o.intent_status ?? '?'}`;
    case 'queued':
    case 'in_progress':
      return waitReason ?? 'handed back';
    default:
      return o.error ? `${o.error.code}: ${o.error.message}` : 'no error recorded';
  }
}

/**
 * Ends the job as its transfer ended, once the step log and the run's deferred writes (its intent
 * followed) are answered: the two are sent in one turn, one round trip.
 */
async function endJob(
  deps: TransferProcessorDeps,
  job: Job,
  out: Done,
  run: { readonly reporter: JobReporter; readonly deferred: DeferredWrites },
): Promise<JobOutcome> {
  const { reporter } = run;
  const written = () => Promise.all([reporter.flush(), run.deferred.settled()]);
  if (!out.record) {
    reporter.ended(out.state, 'the transfer has no record');
    await written();
    throw finalFailure(`${out.state}: no_record: the transfer has no record`);
  }
  const outcome = jobOutcome(out.record);
  reporter.ended(outcome.state, closingLine(outcome, out.record.waitReason));
  if (out.ended) {
    deps.metrics?.transferEnded(
      deps.source,
      outcome.state,
      outcome.error?.code ?? null,
      Date.now() - job.timestamp,
    );
  }
  await written();
  if (!failsJob(outcome.state)) return outcome;
  await writeJobResult(deps.redis, job, outcome);
  throw finalFailure(failedReasonOf(outcome));
}

/**
 * A job the queue gave up on by itself (attempts exhausted, stalled too often): its transfer is
 * made final from its saved steps, and the job's hash then says so — the outcome as its
 * `returnvalue`, and a `failedReason` naming the transfer's state, code and message.
 */
export async function settleGivenUpJob(
  deps: Pick<TransferProcessorDeps, 'pipeline' | 'redis' | 'metrics' | 'source'>,
  job: Pick<Job, 'id' | 'data' | 'failedReason' | 'queueQualifiedName' | 'timestamp'>,
): Promise<boolean> {
  const data = parseTransferJobData(job.data);
  if (!data) return false;
  const out = await abandonTransfer(
    deps.pipeline,
    await deps.pipeline.store.loadRun(data.batchId, data.transferId),
    {
      reason: `the queue gave up: ${job.failedReason ?? 'no reason given'}`,
      jobRound: roundOfJobId(job.id),
    },
  );
  if (!out?.record) return false;
  const outcome = jobOutcome(out.record);
  deps.metrics?.transferEnded(
    deps.source,
    outcome.state,
    outcome.error?.code ?? null,
    Date.now() - job.timestamp,
  );
  await writeJobResult(deps.redis, job, outcome, failedReasonOf(outcome));
  return true;
}
