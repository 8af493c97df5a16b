import { createRequire, syncBuiltinESMExports } from 'node:module';
import {
  context,
  diag,
  DiagLogLevel,
  isSpanContextValid,
  propagation,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type DiagLogger,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { createSpanScrubber, scrubbedText } from './span-scrubber.ts';
import type { TraceSampler, TraceSettings } from './trace-settings.ts';
import { setActiveTracing, type Tracing } from './tracing.ts';

/*
 * Starts OpenTelemetry tracing in this process (docs/traces.md). Loaded with
 * `import()` only when an OTLP endpoint is set (cli/trace-start.ts): every OpenTelemetry module but
 * the API is reached from here alone. It runs before the command's own modules are loaded; the HTTP
 * client instrumentation patches `node:http`'s exports in place, which the service client (got)
 * reads at each call, and fetch (viem's and the Solana RPC's) is followed through undici's
 * diagnostics channels, so neither depends on the order modules were loaded in.
 */

/** Requests never traced: scrapes, probes and bull-board's polling (noise, and no transfer in them). */
const QUIET_PATHS = /^\/(?:metrics|healthz|readyz|dashboard)(?:[/?]|$)/;

/** How long the process waits for its last spans to go out when it ends. */
const SHUTDOWN_WAIT_MS = 5_000;

export type TracingOptions = {
  /** The package version, as `service.version`. */
  readonly version: string;
  /** Instead of the OTLP exporter (tests: an in-memory one); spans then go out as each ends. */
  readonly exporter?: SpanExporter;
  /** Where the SDK's own warnings (an export that failed) go; scrubbed first. */
  readonly warn?: (message: string) => void;
};

export async function startTracing(settings: TraceSettings, options: TracingOptions): Promise<Tracing> {
  const exporter = options.exporter ?? (await otlpExporter(settings));
  const exporting: SpanProcessor = options.exporter
    ? new SimpleSpanProcessor({ exporter })
    : // A big batch makes spans fast: the queue holds a few seconds' worth between exports.
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: 8192,
        maxExportBatchSize: 1024,
        scheduledDelayMillis: 2_000,
      });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': settings.serviceName,
      'service.version': options.version,
    }),
    sampler: samplerOf(settings.sampler),
    // The scrubber first: the exporter's processor sees every span as scrubbed.
    spanProcessors: [createSpanScrubber(), exporting],
  });
  diag.setLogger(
    sdkWarnings(options.warn ?? ((m) => void process.stderr.write(`tracing: ${m}\n`))),
    DiagLogLevel.WARN,
  );
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const instrumentations = instrumentHttp();
  const tracer = provider.getTracer('usdc-batch', options.version);

  const tracing: Tracing = {
    serviceName: settings.serviceName,
    tracer,
    logFields() {
      const span = trace.getActiveSpan();
      if (!span) return undefined;
      const c = span.spanContext();
      if (!isSpanContextValid(c) || (c.traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
      return { trace_id: c.traceId, span_id: c.spanId };
    },
    async inSpan(name, attributes, fn) {
      return await tracer.startActiveSpan(name, { attributes }, async (span) => {
        try {
          return await fn();
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message ?? String(err) });
          throw err;
        } finally {
          span.end();
        }
      });
    },
    nameRequest(method, route) {
      const span = trace.getActiveSpan();
      span?.updateName(`${method} ${route}`);
      span?.setAttribute('http.route', route);
    },
    annotate(attributes: Attributes) {
      trace.getActiveSpan()?.setAttributes(attributes);
    },
    async flush() {
      await provider.forceFlush();
    },
    async shutdown() {
      for (const i of instrumentations) i.disable();
      // ESM's named imports of the builtins follow their unpatched exports again.
      syncBuiltinESMExports();
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, SHUTDOWN_WAIT_MS).unref()),
      ]);
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
      setActiveTracing(undefined);
    },
  };
  setActiveTracing(tracing);
  return tracing;
}

/** The exporter of `OTEL_EXPORTER_OTLP_PROTOCOL`: only that one is loaded. */
async function otlpExporter(settings: TraceSettings): Promise<SpanExporter> {
  const config = { url: settings.endpoint, headers: { ...settings.headers } };
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(config);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(config);
}

/** `OTEL_TRACES_SAMPLER` as the SDK's sampler. */
export function samplerOf(s: TraceSampler): Sampler {
  const root =
    s.root === 'always_on'
      ? new AlwaysOnSampler()
      : s.root === 'always_off'
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(s.ratio);
  return s.parentBased ? new ParentBasedSampler({ root }) : root;
}

/**
 * HTTP client spans for the service's calls (got, over `node:http`/`node:https`) and the RPCs'
 * (fetch, over undici), made only inside a trace — a transfer's run, a request, a command — not
 * for background polls; HTTP server spans for the API's requests. Their URLs are cut to scheme,
 * host and port as they end (span-scrubber.ts).
 */
function instrumentHttp(): { disable(): void }[] {
  const http = new HttpInstrumentation({
    requireParentforOutgoingSpans: true,
    ignoreIncomingRequestHook: (request) => QUIET_PATHS.test(request.url ?? ''),
  });
  const undici = new UndiciInstrumentation({ requireParentforSpans: true });
  // The instrumentation patches a module when it is required: have it patch them now, in place,
  // so the exports every importer shares (ESM's default import included) are the patched ones.
  const require = createRequire(import.meta.url);
  require('node:http');
  require('node:https');
  syncBuiltinESMExports();
  return [http, undici];
}

/**
 * The SDK's own complaints (an export the collector refused or never answered), scrubbed: the
 * first of each kind is said, then at most one a minute, so a collector that is down does not
 * flood the log.
 */
function sdkWarnings(write: (message: string) => void): DiagLogger {
  const lastSaid = new Map<string, number>();
  const say = (message: string, ...args: unknown[]) => {
    const text = scrubbedText(
      [message, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : ''))]
        .filter(Boolean)
        .join(' ')
        .slice(0, 500),
    );
    const kind = text.slice(0, 40);
    const now = Date.now();
    if (now - (lastSaid.get(kind) ?? -Infinity) < 60_000) return;
    lastSaid.set(kind, now);
    write(text);
  };
  return { error: say, warn: say, info: () => {}, debug: () => {}, verbose: () => {} };
}
