import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/*
 * A local OTLP/HTTP trace receiver (`POST /v1/traces`), standing for a collector, Jaeger or Tempo:
 * the tests read what a process exported (OTLP/JSON, parsed), the bench counts what tracing costs
 * (any protocol, counted). Every body is kept as it arrived, so a test can search all of it.
 */

/** One exported span, from OTLP/JSON, flattened for tests. */
export type ReceivedSpan = {
  readonly service: string;
  readonly scope: string;
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a trace's root. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly events: readonly {
    readonly name: string;
    readonly attributes: Readonly<Record<string, unknown>>;
  }[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string };
  readonly startNs: bigint;
};

export type OtlpReceiver = {
  /** The endpoint to give OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` is appended by the exporter). */
  readonly url: string;
  /** Every request body received, decompressed, as text (JSON) or binary-as-latin1 (protobuf). */
  bodies(): readonly string[];
  /** Export requests and bytes received so far. */
  counts(): { readonly requests: number; readonly bytes: number };
  /** The spans of every OTLP/JSON body received so far. */
  spans(): ReceivedSpan[];
  close(): Promise<void>;
};

type JsonValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
};
type JsonKeyValue = { key: string; value: JsonValue };

function valueOf(v: JsonValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: JsonKeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = valueOf(kv.value);
  return out;
}

type JsonSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano?: string | number;
  attributes?: JsonKeyValue[];
  events?: { name: string; attributes?: JsonKeyValue[] }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
};
type JsonExport = {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: { scope?: { name?: string }; spans?: JsonSpan[] }[];
  }[];
};

/** The spans of one OTLP/JSON export body. */
export function spansOfJson(body: string): ReceivedSpan[] {
  const doc = JSON.parse(body) as JsonExport;
  const out: ReceivedSpan[] = [];
  for (const rs of doc.resourceSpans ?? []) {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          service,
          scope: ss.scope?.name ?? '',
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind ?? 0,
          attributes: attributesOf(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          startNs: BigInt(s.startTimeUnixNano ?? 0),
        });
      }
    }
  }
  return out;
}

/** `keepBodies: false` counts requests and bytes only (the bench: no memory grows with the spans). */
export async function startOtlpReceiver(options: { keepBodies?: boolean } = {}): Promise<OtlpReceiver> {
  const keep = options.keepBodies ?? true;
  const bodies: string[] = [];
  const json: string[] = [];
  let requests = 0;
  let bytes = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      requests++;
      bytes += body.length;
      const isJson = (req.headers['content-type'] ?? '').includes('json');
      if (keep) {
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        bodies.push(body.toString(isJson ? 'utf8' : 'latin1'));
        if (isJson) json.push(body.toString('utf8'));
      }
      // An empty ExportTraceServiceResponse: every span accepted.
      res.writeHead(200, { 'content-type': isJson ? 'application/json' : 'application/x-protobuf' });
      res.end(isJson ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies: () => bodies,
    counts: () => ({ requests, bytes }),
    spans: () => json.flatMap(spansOfJson),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
