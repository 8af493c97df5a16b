import type { Telemetry } from 'bullmq';

/*
 * With tracing on (docs/traces.md), the transfer queues are given BullMQ's `telemetry` (the
 * bullmq-otel adapter): each chunk of jobs the producer adds (producer.ts: through the queue's own
 * `trace`, named as its `addBulk`) is a producer span, a child of the request or command that
 * enqueues, and each job it adds carries that span's context (the job's `opts.telemetry.metadata`,
 * `tm` in its hash), from which the transfer's trace links back to it (run-spans.ts). Only the
 * producer side is BullMQ's: the worker's runs are spans of the transfer's own trace.
 */

let telemetry: Telemetry | undefined;

/** Loads the adapter (once tracing has started: it takes the global tracer provider's tracer). */
export async function traceTransferQueues(): Promise<void> {
  const { BullMQOtel } = await import('bullmq-otel');
  telemetry = new BullMQOtel({ tracerName: 'usdc-batch' });
}

/** Stops giving new queues the telemetry (tracing shut down). */
export function untraceTransferQueues(): void {
  telemetry = undefined;
}

/** The telemetry a transfer queue is opened with; undefined with tracing off. */
export function transferQueueTelemetry(): Telemetry | undefined {
  return telemetry;
}
