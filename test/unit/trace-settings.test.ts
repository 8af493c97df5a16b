import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/domain/errors.ts';
import { traceSettings } from '../../src/trace/trace-settings.ts';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    traceSettings(env, 'usdc-batch-worker');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  return [];
};

describe('tracing settings (docs/traces.md)', () => {
  it('is off without an endpoint, and with OTEL_SDK_DISABLED=true', () => {
    expect(traceSettings({}, 'usdc-batch-worker')).toBeUndefined();
    expect(traceSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, 'w')).toBeUndefined();
    expect(
      traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' }, 'w'),
    ).toBeUndefined();
    // Off, even when the rest is malformed: nothing of it is read.
    expect(
      traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'nonsense', OTEL_SDK_DISABLED: 'true' }, 'w'),
    ).toBeUndefined();
  });

  it('appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT; takes the traces endpoint as it is', () => {
    expect(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'w')?.endpoint).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/otlp/' }, 'w')?.endpoint).toBe(
      'https://c.example/otlp/v1/traces',
    );
    expect(
      traceSettings(
        {
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/custom/path',
        },
        'w',
      )?.endpoint,
    ).toBe('http://tempo:4318/custom/path');
  });

  it('defaults: http/protobuf, parentbased_always_on, the command’s service name', () => {
    expect(traceSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 'usdc-batch-api')).toEqual({
      endpoint: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: {},
      serviceName: 'usdc-batch-api',
      sampler: { root: 'always_on', parentBased: true, ratio: 1 },
    });
  });

  it('honours the protocol, headers, service name and sampler variables', () => {
    const s = traceSettings(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'HTTP/JSON',
        OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc,x-tenant=ops',
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=payouts',
        OTEL_SERVICE_NAME: 'payouts-worker',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      },
      'usdc-batch-worker',
    );
    expect(s).toMatchObject({
      protocol: 'http/json',
      headers: { authorization: 'Bearer abc', 'x-tenant': 'payouts' },
      serviceName: 'payouts-worker',
      sampler: { root: 'traceidratio', parentBased: true, ratio: 0.25 },
    });
  });

  it('refuses what it cannot use, naming the variable and never quoting an endpoint or a header', () => {
    const problems = problemsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://user:s3cretpw@c:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_HEADERS: 'api key=s3cretkey,ok=1,=novalue',
      OTEL_TRACES_SAMPLER: 'jaeger_remote',
    });
    expect(problems).toEqual([
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL/),
      expect.stringMatching(
        /^OTEL_EXPORTER_OTLP_PROTOCOL: must be http\/protobuf or http\/json \(gRPC is not supported/,
      ),
      'OTEL_EXPORTER_OTLP_HEADERS: entry 1 is not name=value (values %-encoded)',
      'OTEL_EXPORTER_OTLP_HEADERS: entry 3 is not name=value (values %-encoded)',
      expect.stringMatching(/^OTEL_TRACES_SAMPLER: must be one of always_on, always_off, traceidratio, /),
    ]);
    expect(problems.join('\n')).not.toMatch(/s3cret/);
    expect(problemsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' })).toEqual([
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: is not a valid URL/),
    ]);
    expect(
      problemsOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_TRACES_SAMPLER: 'traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '1.5',
      }),
    ).toEqual([expect.stringMatching(/^OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/)]);
  });
});
