import type { Attributes, Tracer } from '@opentelemetry/api';

/*
 * Whether this process traces (docs/traces.md), and what the rest of the code asks of tracing when
 * it does. This file imports nothing at run time (type imports are erased): the code that traces —
 * the SDK, the exporter, the instrumentations, the queue's run spans — is loaded with `import()`
 * only once an endpoint is set (start-tracing.ts), so with tracing off none of it is ever read.
 */

/** Tracing as started in this process (start-tracing.ts). */
export type Tracing = {
  /** `usdc-batch-worker`, `usdc-batch-api`, `usdc-batch-cli`, or OTEL_SERVICE_NAME. */
  readonly serviceName: string;
  readonly tracer: Tracer;
  /** The active span's ids, for a log line written inside it; undefined outside every span. */
  logFields(): { trace_id: string; span_id: string } | undefined;
  /** Runs `fn` inside a new span (a command: `usdc_batch.enqueue`), ended with it. */
  inSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T>;
  /** Names the active HTTP server span after its route (`POST /v1/batches`). */
  nameRequest(method: string, route: string): void;
  /** Sets attributes on the active span (the request or command that enqueues a batch: its id). */
  annotate(attributes: Attributes): void;
  /** Sends what was recorded so far (resolves on the exporter's answer or its timeout). */
  flush(): Promise<void>;
  /** Flushes, then stops tracing in this process: nothing more is recorded. */
  shutdown(): Promise<void>;
};

let active: Tracing | undefined;

/** The process's tracing, or undefined when it is off (the default). */
export function activeTracing(): Tracing | undefined {
  return active;
}

/** Set by start-tracing.ts (and cleared by its shutdown). */
export function setActiveTracing(tracing: Tracing | undefined): void {
  active = tracing;
}
