import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { createTransferSpans, type RunJob, type TransferSpans } from '../../src/queue/run-spans.ts';
import type { TraceFacts, TraceRoot } from '../../src/store/transfer-trace.ts';
import { ATTR, SPAN } from '../../src/trace/attributes.ts';
import { startTracing } from '../../src/trace/start-tracing.ts';
import type { Tracing } from '../../src/trace/tracing.ts';

/*
 * The queue layer's spans of a transfer (src/queue/run-spans.ts), collected with the SDK's
 * in-memory exporter after the scrubber: the step spans the job reporter's lines open and close,
 * the run's context standing for the open step (a fetch inside a step is its child, through the
 * real undici instrumentation), the root every run and poll joins, re-sends, failures and waits.
 */

const KIND = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 } as const;
const ERROR = 2;

/** The transfer records' trace fields, in memory (what TransferStore keeps in Redis). */
function memoryStore() {
  const roots = new Map<string, TraceRoot>();
  const facts = new Map<string, Omit<TraceFacts, 'root'>>();
  return {
    roots,
    add(id: string, f: Omit<TraceFacts, 'root'>) {
      facts.set(id, f);
    },
    async traceFacts(batchId: string, transferId: string): Promise<TraceFacts | undefined> {
      const f = facts.get(`${batchId}/${transferId}`);
      return f ? { ...f, root: roots.get(`${batchId}/${transferId}`) } : undefined;
    },
    async saveTraceRoot(
      batchId: string,
      transferId: string,
      root: TraceRoot,
    ): Promise<TraceRoot | undefined> {
      const id = `${batchId}/${transferId}`;
      if (!roots.has(id)) roots.set(id, root);
      return roots.get(id);
    },
  };
}

const job = (id: string, metadata?: string): RunJob =>
  ({
    id,
    name: 'BASE→ARB 10.00 USDC',
    attemptsStarted: 1,
    opts: metadata ? { telemetry: { metadata } } : {},
  }) as RunJob;

describe('a transfer run’s spans (in-memory exporter)', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let store: ReturnType<typeof memoryStore>;
  let spans: TransferSpans;
  let server: Server;
  let rpc: string;

  beforeAll(async () => {
    tracing = await startTracing(
      {
        endpoint: 'http://unused.invalid/v1/traces',
        protocol: 'http/protobuf',
        headers: {},
        serviceName: 'usdc-batch-worker',
        sampler: { root: 'always_on', parentBased: true, ratio: 1 },
      },
      { version: 'test', exporter },
    );
    server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    rpc = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await tracing?.shutdown();
    server?.close();
  });
  beforeEach(() => {
    exporter.reset();
    store = memoryStore();
    spans = createTransferSpans({ tracer: tracing.tracer, store });
  });

  const finished = async () => {
    await tracing.flush();
    return exporter.getFinishedSpans();
  };
  const named = (all: ReadableSpan[], name: string) => all.filter((s) => s.name === name);
  const childrenOf = (all: ReadableSpan[], parent: ReadableSpan) =>
    all.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

  it('makes the root (linked to the producer), a run, and a span per step with each call inside its step', async () => {
    store.add('b1/t1', { from: 'BASE', to: 'ARB', state: 'queued' });
    // The producer span's context, as bullmq-otel stores it with the job.
    const producer = tracing.tracer.startSpan('addBulk transfers-BASE');
    producer.end();
    const pc = producer.spanContext();
    const metadata = JSON.stringify({ traceparent: `00-${pc.traceId}-${pc.spanId}-01` });
    const run = await spans.startRun(job('b1/t1', metadata), { batchId: 'b1', transferId: 't1' }, 'BASE');
    const lines: string[] = [];
    const report = run.reporting((step, message) => lines.push(`${step}: ${message}`));
    await run.within(async () => {
      report('estimate', 'asking the service for the fee');
      await fetch(`${rpc}/estimate/KEY?apikey=KEY`);
      report('estimate', 'fee 0.02 USDC');
      report('guard', 'checking the fee');
      report('sign', 'choosing a BASE owner');
      report(null, 'owner 0xf39F…2266 chosen on BASE');
      await fetch(`${rpc}/rpc`, { method: 'POST', body: '{}' });
      report('sign', 'permit signed');
      report(
        'send',
        'POST /sdk/v1/transfer (permit nonce 0): send 1 of a new payload, Idempotency-Key b1/t1/1',
      );
      await fetch(`${rpc}/sdk/v1/transfer`, { method: 'POST', body: '{}' });
      report('answer', 'accepted: intent int_1 (pending)');
    });
    run.ended({ state: 'submitted', error: null, intent_id: 'int_1', attempts: 1 });
    // The job's own reporter heard every line.
    expect(lines).toHaveLength(8);

    const all = await finished();
    const root = named(all, SPAN.transfer)[0] as ReadableSpan;
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.links.map((l) => l.context.spanId)).toEqual([pc.spanId]);
    expect(store.roots.get('b1/t1')).toEqual({
      traceId: root.spanContext().traceId,
      spanId: root.spanContext().spanId,
    });
    const runSpan = named(all, SPAN.run)[0] as ReadableSpan;
    expect(runSpan.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    expect(runSpan.kind).toBe(KIND.consumer);
    expect(runSpan.attributes).toMatchObject({
      [ATTR.batchId]: 'b1',
      [ATTR.transferId]: 't1',
      [ATTR.chain]: 'BASE',
      [ATTR.to]: 'ARB',
      [ATTR.state]: 'submitted',
      [ATTR.intentId]: 'int_1',
      [ATTR.firstRun]: true,
    });
    const steps = childrenOf(all, runSpan);
    expect(steps.map((s) => s.name)).toEqual([
      'usdc_batch.estimate',
      'usdc_batch.guard',
      'usdc_batch.sign',
      'usdc_batch.send',
    ]);
    const [estimate, guard, sign, send] = steps as [ReadableSpan, ReadableSpan, ReadableSpan, ReadableSpan];
    const calls = (s: ReadableSpan) => childrenOf(all, s).filter((c) => c.kind === KIND.client);
    expect(calls(estimate).map((c) => c.attributes['url.full'])).toEqual([rpc]);
    expect(calls(guard)).toEqual([]);
    expect(calls(sign)).toHaveLength(1);
    expect(calls(send)).toHaveLength(1);
    expect(estimate.events.map((e) => e.attributes?.[ATTR.message])).toEqual([
      'asking the service for the fee',
      'fee 0.02 USDC',
    ]);
    expect(sign.events.map((e) => e.name)).toEqual(['sign', 'seen', 'sign']);
    expect(send.attributes).toMatchObject({
      [ATTR.sendNumber]: 1,
      [ATTR.resend]: false,
      [ATTR.answer]: 'accepted',
      [ATTR.intentId]: 'int_1',
    });
    expect(JSON.stringify(all.map((s) => s.attributes))).not.toContain('KEY');
  });

  it('puts a later run in the same trace, shows a re-send, and fails the step the transfer failed in', async () => {
    store.add('b1/t2', { from: 'SOLANA', to: 'BASE', state: 'in_progress' });
    const first = await spans.startRun(job('b1/t2'), { batchId: 'b1', transferId: 't2' }, 'SOLANA');
    first.reporting(() => {})('build', 'asking the service to build the transaction');
    first.handedBack('the service answered 503; again in 2 s');
    const second = await spans.startRun(job('b1/t2'), { batchId: 'b1', transferId: 't2' }, 'SOLANA');
    const report = second.reporting(() => {});
    await second.within(async () => {
      report('send', 'POST /sdk/v1/solana/submit: send 1 of a new payload, Idempotency-Key b1/t2/1');
      report('answer', 'ambiguous: re-sending the same payload in 1.0 s');
      report('send', 'POST /sdk/v1/solana/submit: send 2 of the same payload, Idempotency-Key b1/t2/1');
      report('answer', 'ambiguous: its outcome is unknown (a send may have been processed): needs review');
    });
    second.ended({
      state: 'needs_review',
      error: { code: 'outcome_unknown', message: 'the answer was lost' },
      intent_id: null,
      attempts: 2,
    });

    const all = await finished();
    const root = named(all, SPAN.transfer)[0] as ReadableSpan;
    const runs = named(all, SPAN.run);
    expect(runs).toHaveLength(2);
    for (const r of runs) {
      expect(r.spanContext().traceId).toBe(root.spanContext().traceId);
      expect(r.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    }
    const [handedBack, failed] = runs as [ReadableSpan, ReadableSpan];
    expect(handedBack.attributes).toMatchObject({
      [ATTR.firstRun]: true,
      [ATTR.waitReason]: 'the service answered 503; again in 2 s',
    });
    expect(handedBack.status.code).not.toBe(ERROR);
    expect(failed.attributes).toMatchObject({
      [ATTR.firstRun]: false,
      [ATTR.state]: 'needs_review',
      [ATTR.errorCode]: 'outcome_unknown',
    });
    expect(failed.status.code).toBe(ERROR);
    // On a SOLANA source the send is `submit`; the second is a re-send.
    const submits = childrenOf(all, failed);
    expect(submits.map((s) => [s.name, s.attributes[ATTR.sendNumber], s.attributes[ATTR.resend]])).toEqual([
      ['usdc_batch.submit', 1, false],
      ['usdc_batch.submit', 2, true],
    ]);
    for (const s of submits) expect(s.status.code).toBe(ERROR);
    expect(submits[1]?.attributes[ATTR.errorCode]).toBe('outcome_unknown');
    expect(submits[0]?.attributes[ATTR.errorCode]).toBeUndefined();
  });

  it('polls an intent in its transfer’s trace; a transfer without one gets no span', async () => {
    store.add('b1/t3', { from: 'BASE', to: 'ARB', state: 'submitted' });
    store.roots.set('b1/t3', { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) });
    store.add('b1/t4', { from: 'BASE', to: 'ARB', state: 'submitted' });
    await spans.follow({ batchId: 'b1', transferId: 't3', intentId: 'int_3' }, async (said) =>
      said('complete'),
    );
    let ran = false;
    await spans.follow({ batchId: 'b1', transferId: 't4', intentId: 'int_4' }, async () => {
      ran = true;
    });
    expect(ran).toBe(true);
    const all = await finished();
    expect(all.map((s) => s.name)).toEqual([SPAN.follow]);
    const follow = all[0] as ReadableSpan;
    expect(follow.spanContext().traceId).toBe('a'.repeat(32));
    expect(follow.parentSpanContext?.spanId).toBe('b'.repeat(16));
    expect(follow.attributes).toMatchObject({
      [ATTR.intentId]: 'int_3',
      [ATTR.intentStatus]: 'complete',
      [ATTR.chain]: 'BASE',
    });
  });

  it('writes the open step’s trace_id and span_id on a log line said inside it, none outside', async () => {
    store.add('b1/t5', { from: 'BASE', to: 'ARB', state: 'queued' });
    const raw: string[] = [];
    const log = createLogger('info', { write: (l: string) => void raw.push(l) });
    const run = await spans.startRun(job('b1/t5'), { batchId: 'b1', transferId: 't5' }, 'BASE');
    const report = run.reporting(() => {});
    await run.within(async () => {
      report('estimate', 'asking');
      log.warn('inside');
    });
    log.warn('outside');
    run.ended({ state: 'submitted', error: null, intent_id: 'int_5', attempts: 1 });
    const estimate = named(await finished(), 'usdc_batch.estimate')[0] as ReadableSpan;
    const [inside, outside] = raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(inside).toMatchObject({
      msg: 'inside',
      trace_id: estimate.spanContext().traceId,
      span_id: estimate.spanContext().spanId,
    });
    expect(outside).not.toHaveProperty('trace_id');
  });
});
