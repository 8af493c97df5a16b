import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { Job } from 'bullmq';
import type { Chain } from '../domain/chains.ts';
import { hideUrlSecrets } from '../domain/url-display.ts';
import type { StepName, StepReporter } from '../pipeline/run-transfer.ts';
import type { TransferStore } from '../store/transfer-store.ts';
import type { TraceFacts, TraceRoot } from '../store/transfer-trace.ts';
import { ATTR, SPAN, stepSpanName } from '../trace/attributes.ts';
import type { JobOutcome } from '../present/transfer-view.ts';
import { isSettleJob, roundOfJobId, type TransferJobData } from './jobs.ts';

/*
 * A transfer's trace (docs/traces.md): one trace per transfer, whatever runs it
 * takes. Its first traced run makes the root (`usdc_batch.transfer`, linked to the producer span of
 * the request or command that enqueued it) and records its ids in the transfer's record; each run
 * (`usdc_batch.run`) and each poll of its intent (`usdc_batch.follow`) is a child of that root.
 * Inside a run, the steps the pipeline reports (its StepReporter, the job log's lines) become spans:
 * a step's span opens when the step is first reported and closes when the next begins or the run
 * ends; every line becomes an event of the step it was said in. The HTTP calls a step makes are
 * children of its span: the run's context holds a span that stands for whichever step is open.
 * Loaded (with its OpenTelemetry API) only when tracing is on (worker/start-worker.ts).
 */

export type TransferSpans = {
  /** A job's run: reads the transfer's trace, or begins it (the root, saved in the record). */
  startRun(job: RunJob, data: TransferJobData, source: Chain): Promise<RunSpans>;
  /** One poll of a submitted intent, as a span of its transfer's trace (none if it has no trace). */
  follow<T>(
    target: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
    poll: (said: (status: string) => void) => Promise<T>,
  ): Promise<T>;
  /**
   * One look at a CCTP intent (docs/cctp.md "The flow", steps 5–6): each step it says (`attest`,
   * `mint`) is a span of its transfer's trace (`usdc_batch.attest`, `usdc_batch.mint`), each line an
   * event of it; a look that says nothing makes none.
   */
  cctpLook<T>(
    target: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
    look: (step: CctpStepSaid, said: (status: string) => void) => Promise<T>,
  ): Promise<T>;
};

/** A CCTP look's step, said with its line. */
export type CctpStepSaid = (step: 'attest' | 'mint', message: string) => void;

/** What a run's spans read of its BullMQ job. */
export type RunJob = Pick<Job, 'id' | 'name' | 'attemptsStarted' | 'opts'>;

/** The spans of one run, driven by the processor (transfer-processor.ts). */
export type RunSpans = {
  /** The reporter the run is given: `inner` (the job's log), each step also a span. */
  reporting(inner: StepReporter): StepReporter;
  /** Runs the pipeline with the open step as the parent of whatever it calls. */
  within<T>(fn: () => Promise<T>): Promise<T>;
  /** The job went back to the queue (a wait): the run's spans end, not failed. */
  handedBack(reason: string): void;
  /** The run ended with the transfer as `outcome` says: a failed, rejected or needs_review one fails its step. */
  ended(outcome: Pick<JobOutcome, 'state' | 'error' | 'intent_id' | 'attempts'>): void;
  /** The run ended with an unexpected error (it goes back to the queue's retries). */
  failed(err: unknown): void;
};

type SpanDeps = {
  readonly tracer: Tracer;
  readonly store: Pick<TransferStore, 'traceFacts' | 'saveTraceRoot'>;
};

export function createTransferSpans(deps: SpanDeps): TransferSpans {
  return {
    startRun: (job, data, source) => startRun(deps, job, data, source),
    follow: (target, poll) => followSpan(deps, target, poll),
    cctpLook: (target, look) => cctpLookSpans(deps, target, look),
  };
}

/** The states in which a transfer's run failed its step: nothing paid, or nobody knows. */
const FAILED_STATES = new Set(['failed', 'rejected', 'needs_review']);

/** A parent context standing for the transfer's root, known by its ids (it ended in an earlier run). */
function rootContext(root: TraceRoot): Context {
  const parent: SpanContext = {
    traceId: root.traceId,
    spanId: root.spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/** The producer span that added the job (BullMQ's telemetry metadata, `tm`), as a link. */
function producerLink(job: RunJob): Link | undefined {
  const metadata = job.opts?.telemetry?.metadata;
  if (typeof metadata !== 'string') return undefined;
  try {
    const carrier = JSON.parse(metadata) as Record<string, string>;
    const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
    return linked && trace.isSpanContextValid(linked)
      ? { context: linked, attributes: { 'usdc_batch.link': 'enqueued by' } }
      : undefined;
  } catch {
    return undefined;
  }
}

function transferAttributes(data: TransferJobData, source: Chain, facts: TraceFacts | undefined): Attributes {
  return {
    [ATTR.batchId]: data.batchId,
    [ATTR.transferId]: data.transferId,
    [ATTR.chain]: source,
    ...(facts?.to ? { [ATTR.to]: facts.to } : {}),
  };
}

/**
 * The transfer's trace: the root its record names, or — on its first traced run — a new root,
 * linked to what enqueued it, ended at once and saved. Of two runs that begin it at once, the
 * first saved wins and both go on in it.
 */
async function transferRoot(
  deps: SpanDeps,
  job: RunJob,
  data: TransferJobData,
  base: Attributes,
  facts: TraceFacts | undefined,
): Promise<{ parent: Context; first: boolean }> {
  if (facts?.root) return { parent: rootContext(facts.root), first: false };
  // A job of a transfer that has no record: its run is a trace of its own.
  if (!facts) return { parent: ROOT_CONTEXT, first: true };
  const link = producerLink(job);
  const root = deps.tracer.startSpan(SPAN.transfer, {
    root: true,
    kind: SpanKind.INTERNAL,
    attributes: { ...base, ...(facts.state ? { [ATTR.state]: facts.state } : {}) },
    ...(link ? { links: [link] } : {}),
  });
  root.end();
  const c = root.spanContext();
  if ((c.traceFlags & TraceFlags.SAMPLED) === 0)
    return { parent: trace.setSpan(ROOT_CONTEXT, root), first: true };
  const stood = await deps.store.saveTraceRoot(data.batchId, data.transferId, {
    traceId: c.traceId,
    spanId: c.spanId,
  });
  if (stood && stood.traceId !== c.traceId) return { parent: rootContext(stood), first: false };
  return { parent: trace.setSpan(ROOT_CONTEXT, root), first: true };
}

async function startRun(
  deps: SpanDeps,
  job: RunJob,
  data: TransferJobData,
  source: Chain,
): Promise<RunSpans> {
  const facts = await deps.store.traceFacts(data.batchId, data.transferId);
  const base = transferAttributes(data, source, facts);
  const { parent, first } = await transferRoot(deps, job, data, base, facts);
  const round = roundOfJobId(job.id);
  // A later round (`retry`, an approval after a hold) was enqueued by its own request: linked too.
  const link = !first && round > 0 ? producerLink(job) : undefined;
  const run = deps.tracer.startSpan(
    SPAN.run,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...base,
        ...(facts?.state ? { [ATTR.state]: facts.state } : {}),
        [ATTR.jobId]: job.id ?? '',
        [ATTR.round]: round,
        [ATTR.jobAttempt]: job.attemptsStarted,
        [ATTR.firstRun]: first,
        ...(isSettleJob(job.name) ? { 'usdc_batch.settle': true } : {}),
      },
      ...(link ? { links: [link] } : {}),
    },
    parent,
  );
  return runSpans(deps.tracer, run, trace.setSpan(parent, run), base, source);
}

/** The open step of a run: its span and what was said in it. */
type OpenStep = { readonly name: StepName; readonly span: Span; answered: boolean };

function runSpans(tracer: Tracer, run: Span, runContext: Context, base: Attributes, source: Chain): RunSpans {
  let open: OpenStep | undefined;
  let done = false;
  const current = () => open?.span ?? run;

  const closeStep = () => {
    open?.span.end();
    open = undefined;
  };
  const beginStep = (name: StepName) => {
    closeStep();
    const spanName = stepSpanName(name === 'send' && source === 'SOLANA' ? 'submit' : name);
    open = {
      name,
      span: tracer.startSpan(spanName, { attributes: { ...base, [ATTR.state]: 'in_progress' } }, runContext),
      answered: false,
    };
  };
  const report = (step: StepName | null, message: string) => {
    if (done) return;
    const opensStep =
      step !== null &&
      step !== 'wait' &&
      step !== 'answer' &&
      (step !== open?.name || (step === 'send' && open.answered));
    if (opensStep) beginStep(step);
    current().addEvent(step ?? 'seen', { [ATTR.message]: hideUrlSecrets(message).slice(0, 500) });
    if (step === 'send' && open) noteSend(open, message);
    if (step === 'answer' && open) noteAnswer(open, message);
  };
  // The span the run's context holds: whichever step is open (the run itself between steps).
  const cursor = cursorSpan(current);
  const finish = () => {
    done = true;
    closeStep();
    run.end();
  };

  return {
    reporting(inner) {
      return (step, message, announce) => {
        inner(step, message, announce);
        report(step, message);
      };
    },
    async within(fn) {
      return await context.with(trace.setSpan(runContext, cursor), fn);
    },
    handedBack(reason) {
      if (done) return;
      run.setAttribute(ATTR.waitReason, hideUrlSecrets(reason).slice(0, 300));
      run.addEvent('handed back', { [ATTR.message]: hideUrlSecrets(reason).slice(0, 500) });
      finish();
    },
    ended(outcome) {
      if (done) return;
      markOutcome(run, open, outcome);
      finish();
    },
    failed(err) {
      if (done) return;
      const message = hideUrlSecrets((err as Error)?.message ?? String(err)).slice(0, 300);
      for (const span of open ? [open.span, run] : [run]) {
        span.setStatus({ code: SpanStatusCode.ERROR, message });
        span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
      }
      finish();
    },
  };
}

/** A send's line says which send of its payload it is (`send 2 of the same payload`): a re-send. */
function noteSend(open: OpenStep, message: string): void {
  const n = /\bsend ([0-9]+) of\b/.exec(message);
  if (!n) return;
  open.span.setAttribute(ATTR.sendNumber, Number(n[1]));
  open.span.setAttribute(ATTR.resend, Number(n[1]) > 1);
}

/** The service's answer to a send: its kind, and an error status unless it was accepted. */
function noteAnswer(open: OpenStep, message: string): void {
  open.answered = true;
  const kind = /^([a-z_]+):/.exec(message)?.[1];
  if (!kind) return;
  open.span.setAttribute(ATTR.answer, kind);
  if (kind !== 'accepted')
    open.span.setStatus({ code: SpanStatusCode.ERROR, message: hideUrlSecrets(message).slice(0, 300) });
}

/** A span that stands for whichever span `current` names now; ending it ends nothing. */
function cursorSpan(current: () => Span): Span {
  const cursor: Span = {
    spanContext: () => current().spanContext(),
    setAttribute: (k, v) => (current().setAttribute(k, v), cursor),
    setAttributes: (a) => (current().setAttributes(a), cursor),
    addEvent: (n, a, t) => (current().addEvent(n, a, t), cursor),
    addLink: (l) => (current().addLink(l), cursor),
    addLinks: (l) => (current().addLinks(l), cursor),
    setStatus: (s) => (current().setStatus(s), cursor),
    updateName: (n) => (current().updateName(n), cursor),
    // Whoever holds the context does not end the run's spans: the processor does.
    end: () => {},
    isRecording: () => current().isRecording(),
    recordException: (e, t) => current().recordException(e, t),
  };
  return cursor;
}

/** The run's outcome on the run's span and its open step's; a failed state marks both as errors. */
function markOutcome(run: Span, open: OpenStep | undefined, outcome: Parameters<RunSpans['ended']>[0]): void {
  const facts: Attributes = {
    [ATTR.state]: outcome.state,
    ...(outcome.intent_id ? { [ATTR.intentId]: outcome.intent_id } : {}),
    'usdc_batch.attempts': outcome.attempts,
  };
  run.setAttributes(facts);
  open?.span.setAttributes(facts);
  if (FAILED_STATES.has(outcome.state)) {
    const status = {
      code: SpanStatusCode.ERROR,
      message: outcome.error
        ? `${outcome.error.code}: ${outcome.error.message}`.slice(0, 300)
        : outcome.state,
    };
    const code = outcome.error ? { [ATTR.errorCode]: outcome.error.code } : {};
    for (const span of open ? [open.span, run] : [run]) {
      span.setStatus(status);
      span.setAttributes(code);
    }
  }
}

async function followSpan<T>(
  deps: SpanDeps,
  target: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
  poll: (said: (status: string) => void) => Promise<T>,
): Promise<T> {
  const facts = await deps.store.traceFacts(target.batchId, target.transferId);
  if (!facts?.root) return await poll(() => {});
  const parent = rootContext(facts.root);
  const span = deps.tracer.startSpan(
    SPAN.follow,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...intentAttributes(target, facts),
        ...(facts.state ? { [ATTR.state]: facts.state } : {}),
      },
    },
    parent,
  );
  const said = (status: string) => {
    span.setAttribute(ATTR.intentStatus, status);
    // The service took the USDC and did not deliver it (docs/promises.md).
    if (status === 'failed')
      span.setStatus({ code: SpanStatusCode.ERROR, message: `intent ${target.intentId} failed` });
  };
  try {
    return await context.with(trace.setSpan(parent, span), () => poll(said));
  } catch (err) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: hideUrlSecrets((err as Error)?.message ?? String(err)).slice(0, 300),
    });
    throw err;
  } finally {
    span.end();
  }
}

/** What a span about a transfer's intent says of it: the batch, the transfer, its route and its intent. */
function intentAttributes(
  target: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
  facts: Pick<TraceFacts, 'from' | 'to'>,
): Record<string, string> {
  return {
    [ATTR.batchId]: target.batchId,
    [ATTR.transferId]: target.transferId,
    ...(facts.from ? { [ATTR.chain]: facts.from } : {}),
    ...(facts.to ? { [ATTR.to]: facts.to } : {}),
    [ATTR.intentId]: target.intentId,
  };
}

/** The attest and mint spans of one CCTP look (TransferSpans.cctpLook). */
async function cctpLookSpans<T>(
  deps: SpanDeps,
  target: { readonly batchId: string; readonly transferId: string; readonly intentId: string },
  look: (step: CctpStepSaid, said: (status: string) => void) => Promise<T>,
): Promise<T> {
  const facts = await deps.store.traceFacts(target.batchId, target.transferId);
  if (!facts?.root)
    return await look(
      () => {},
      () => {},
    );
  const parent = rootContext(facts.root);
  let open: { readonly step: string; readonly span: Span } | undefined;
  const step: CctpStepSaid = (name, message) => {
    if (open?.step !== name) {
      open?.span.end();
      const span = deps.tracer.startSpan(
        stepSpanName(name),
        {
          kind: SpanKind.INTERNAL,
          attributes: intentAttributes(target, facts),
        },
        parent,
      );
      open = { step: name, span };
    }
    open.span.addEvent(name, { [ATTR.message]: hideUrlSecrets(message).slice(0, 500) });
  };
  const said = (status: string) => open?.span.setAttribute(ATTR.intentStatus, status);
  try {
    return await context.with(parent, () => look(step, said));
  } catch (err) {
    open?.span.setStatus({
      code: SpanStatusCode.ERROR,
      message: hideUrlSecrets((err as Error)?.message ?? String(err)).slice(0, 300),
    });
    throw err;
  } finally {
    open?.span.end();
  }
}
