import { ConfigError, type ConfigProblem } from '../domain/errors.ts';
import type { Env } from '../config/env-reader.ts';

/*
 * The OpenTelemetry settings (docs/traces.md), read with the standard variables'
 * meanings from the environment and `.env`. This file loads nothing of OpenTelemetry: with no
 * endpoint set, it is all that runs of tracing.
 */

/** OTLP over HTTP: protobuf (the default) or JSON. gRPC is not offered. */
export const TRACE_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type TraceProtocol = (typeof TRACE_PROTOCOLS)[number];

/** `OTEL_TRACES_SAMPLER`: whether a new trace is kept, and whether a remote parent's choice is followed. */
export type TraceSampler = {
  readonly root: 'always_on' | 'always_off' | 'traceidratio';
  readonly parentBased: boolean;
  /** `OTEL_TRACES_SAMPLER_ARG`: the share of new traces kept by `traceidratio` (0 … 1). */
  readonly ratio: number;
};

export type TraceSettings = {
  /** Where spans are sent: the traces URL itself (`…/v1/traces`). */
  readonly endpoint: string;
  readonly protocol: TraceProtocol;
  /** `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`: sent with every export (a collector's credential). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly sampler: TraceSampler;
};

const SAMPLERS: Record<string, TraceSampler> = {
  always_on: { root: 'always_on', parentBased: false, ratio: 1 },
  always_off: { root: 'always_off', parentBased: false, ratio: 1 },
  traceidratio: { root: 'traceidratio', parentBased: false, ratio: 1 },
  parentbased_always_on: { root: 'always_on', parentBased: true, ratio: 1 },
  parentbased_always_off: { root: 'always_off', parentBased: true, ratio: 1 },
  parentbased_traceidratio: { root: 'traceidratio', parentBased: true, ratio: 1 },
};

const str = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
};

/**
 * The settings tracing runs with, or undefined when it is off: no OTLP endpoint set, or
 * `OTEL_SDK_DISABLED=true`. A malformed variable is a configuration error naming it (exit 2); its
 * value is never quoted, since an endpoint or a header may carry a credential.
 */
export function traceSettings(env: Env, defaultServiceName: string): TraceSettings | undefined {
  if (str(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const problems: ConfigProblem[] = [];
  const problem = (variable: string, message: string) => problems.push({ variable, message });
  const endpoint = tracesEndpoint(env, problem);
  if (endpoint === null) return undefined;
  const settings = {
    endpoint: endpoint ?? '',
    protocol: protocolOf(env, problem),
    headers: headersOf(env, problem),
    serviceName: str(env, 'OTEL_SERVICE_NAME') ?? defaultServiceName,
    sampler: samplerOf(env, problem),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return settings;
}

/**
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
 * `/v1/traces` appended to its path (the specification's rule); null when neither is set.
 */
function tracesEndpoint(
  env: Env,
  problem: (variable: string, message: string) => void,
): string | null | undefined {
  const own = str(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  const variable = own !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const text = own ?? base;
  if (text === undefined) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    problem(variable, 'is not a valid URL (an OTLP/HTTP receiver, e.g. http://localhost:4318)');
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.host === '') {
    problem(
      variable,
      'must be an http or https URL naming a host (OTLP over HTTP, e.g. http://localhost:4318)',
    );
    return undefined;
  }
  if (own !== undefined) return url.href;
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

function protocolOf(env: Env, problem: (variable: string, message: string) => void): TraceProtocol {
  const own = str(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL');
  const variable = own !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = (own ?? str(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf').toLowerCase();
  if ((TRACE_PROTOCOLS as readonly string[]).includes(value)) return value as TraceProtocol;
  problem(
    variable,
    `must be http/protobuf or http/json${value === 'grpc' ? ' (gRPC is not supported: use the receiver’s OTLP/HTTP port, 4318 by default)' : ''}`,
  );
  return 'http/protobuf';
}

/** `key=value,key2=value2`, values %-encoded (the W3C Baggage form the specification uses). */
function headersOf(env: Env, problem: (variable: string, message: string) => void): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const variable of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const text = str(env, variable);
    if (text === undefined) continue;
    for (const [i, part] of text.split(',').entries()) {
      if (part.trim() === '') continue;
      const eq = part.indexOf('=');
      const name = eq > 0 ? part.slice(0, eq).trim() : '';
      let value: string | undefined;
      try {
        value = eq > 0 ? decodeURIComponent(part.slice(eq + 1).trim()) : undefined;
      } catch {
        value = undefined;
      }
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || value === undefined) {
        // Neither the name nor the value is quoted: a header is where a collector's key goes.
        problem(variable, `entry ${i + 1} is not name=value (values %-encoded)`);
        continue;
      }
      headers[name.toLowerCase()] = value;
    }
  }
  return headers;
}

function samplerOf(env: Env, problem: (variable: string, message: string) => void): TraceSampler {
  const name = (str(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on').toLowerCase();
  const sampler = SAMPLERS[name];
  if (!sampler) {
    problem('OTEL_TRACES_SAMPLER', `must be one of ${Object.keys(SAMPLERS).join(', ')}`);
    return SAMPLERS['parentbased_always_on'] as TraceSampler;
  }
  const arg = str(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (sampler.root !== 'traceidratio' || arg === undefined) return sampler;
  const ratio = /^(?:0|1|0?\.[0-9]+|1\.0*)$/.test(arg) ? Number(arg) : NaN;
  if (!(ratio >= 0 && ratio <= 1)) {
    problem(
      'OTEL_TRACES_SAMPLER_ARG',
      `must be a number from 0 to 1 (the share of traces kept; got "${arg.slice(0, 20)}")`,
    );
    return sampler;
  }
  return { ...sampler, ratio };
}
