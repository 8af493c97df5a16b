import { createBatchReader } from '../../src/present/batch-status.ts';
import { startOtlpReceiver } from '../../support/otlp-receiver.ts';
import { solanaRows } from '../lib/rows.ts';
import { SOLANA_CONCURRENCY } from './solana.ts';
import { runProductBatch, type Context, type FlowRun } from './throughput.ts';

/** A run with tracing on: what was exported besides the flow's own figures. */
export type TracedRun = FlowRun & {
  /** Transfers whose record holds a trace id (all of them, or tracing did not run). */
  readonly traced: number;
  /** OTLP export requests and bytes (http/protobuf, as sent) the local receiver got for the batch. */
  readonly exportRequests: number;
  readonly exportBytes: number;
};

export type TracingResult = {
  readonly rows: number;
  readonly concurrency: number;
  readonly runs: readonly { readonly off: FlowRun; readonly on: TracedRun }[];
};

/** How many of the batch's transfers have a trace id in their record. */
async function tracedTransfers(
  client: Parameters<NonNullable<Parameters<typeof runProductBatch>[1]['inspect']>>[0],
  prefix: string,
  batchId: string,
): Promise<number> {
  let n = 0;
  for await (const page of createBatchReader({ redis: client, prefix }).allTransfers(batchId)) {
    n += page.filter((t) => t.traceId !== null).length;
  }
  return n;
}

/**
 * 8. What tracing costs (docs/traces.md): the Solana flow of section 2 (the most CPU-bound one,
 * where a cost shows most) with tracing off, and on — every trace sampled (`always_on`), spans
 * exported over OTLP/HTTP (http/protobuf) to a receiver the bench runs on loopback (it only counts),
 * the `enqueue` traced too. Alternating order, a fresh Redis per run.
 */
export async function benchTracing(ctx: Context, p: { rows: number; runs: number }): Promise<TracingResult> {
  const receiver = await startOtlpReceiver({ keepBodies: false });
  try {
    const rows = solanaRows(p.rows, 'trace');
    const runs: { off: FlowRun; on: TracedRun }[] = [];
    for (let i = 0; i < p.runs; i++) {
      const off = () =>
        runProductBatch(ctx, {
          rows,
          workers: 1,
          env: { WORKER_CONCURRENCY: String(SOLANA_CONCURRENCY) },
          name: `tracing-off-${i}`,
        });
      const on = async (): Promise<TracedRun> => {
        const before = receiver.counts();
        const r = await runProductBatch(ctx, {
          rows,
          workers: 1,
          env: {
            WORKER_CONCURRENCY: String(SOLANA_CONCURRENCY),
            OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
            OTEL_TRACES_SAMPLER: 'always_on',
          },
          name: `tracing-on-${i}`,
          inspect: tracedTransfers,
        });
        // The workers stopped: what they held was flushed on the way out.
        const after = receiver.counts();
        const traced = r.inspected ?? 0;
        if (traced !== rows.length)
          throw new Error(`tracing on: ${traced} of ${rows.length} transfers have a trace`);
        return {
          ...r,
          traced,
          exportRequests: after.requests - before.requests,
          exportBytes: after.bytes - before.bytes,
        };
      };
      let o: FlowRun;
      let t: TracedRun;
      if (i % 2 === 0) {
        o = await off();
        t = await on();
      } else {
        t = await on();
        o = await off();
      }
      runs.push({ off: o, on: t });
      ctx.log(
        `tracing run ${i + 1}: off ${o.perSecond.toFixed(1)}/s, on ${t.perSecond.toFixed(1)}/s (${(t.perSecond / o.perSecond).toFixed(2)}×), worker CPU ${o.cpuMsPerTransfer.worker.toFixed(2)} → ${t.cpuMsPerTransfer.worker.toFixed(2)} ms/transfer, ${(t.exportBytes / rows.length).toFixed(0)} B exported per transfer`,
      );
    }
    return { rows: p.rows, concurrency: SOLANA_CONCURRENCY, runs };
  } finally {
    await receiver.close();
  }
}
