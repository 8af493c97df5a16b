import { format as formatText } from 'node:util';
import { pino, type Logger, type DestinationStream } from 'pino';
import { REDACTED as CENSOR, isSecretKey, scrubText } from '../domain/secret-text.ts';
import { displayUrl } from '../domain/url-display.ts';
import { prettyLine } from './pretty-line.ts';
import { activeTracing } from '../trace/tracing.ts';

export type { Logger };

/**
 * Paths pino itself replaces (fast-redact). They are kept as a first layer; `redactDeep` below
 * catches the same names at any depth and in any letter case, which fixed paths cannot.
 */
const REDACT_PATHS = [
  'privateKey',
  '*.privateKey',
  'secretKey',
  '*.secretKey',
  'secret',
  '*.secret',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'password',
  '*.password',
  'sentinelPassword',
  '*.sentinelPassword',
  'redisSentinelPassword',
  '*.redisSentinelPassword',
  'signature',
  '*.signature',
  '*.*.signature',
  'r',
  's',
  '*.r',
  '*.s',
  '*.permit',
  'permit',
  'signedTransaction',
  '*.signedTransaction',
  'signed_transaction',
  '*.signed_transaction',
  'headers.authorization',
  'headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-signature"]',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
];

const MAX_DEPTH = 8;

/** A copy of `value` with secret-named fields censored at any depth; the input is not modified. */
function redactDeep(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof URL) return displayUrl(value);
  if (depth >= MAX_DEPTH || seen.has(value)) return value;
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1, seen));
  let entries: [string, unknown][];
  if (value instanceof Error) {
    // pino's serializer gives type, message (with causes), stack and the error's own fields, such as
    // a client error's request options and headers.
    entries = Object.entries(pino.stdSerializers.err(value));
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    // Class instances (Secret, Date, Buffer) keep their own JSON form.
    if (proto !== Object.prototype && proto !== null) return value;
    entries = Object.entries(value);
  }
  const out: Record<string, unknown> = {};
  for (const [key, v] of entries) {
    out[key] = isSecretKey(key) && v !== undefined && v !== null ? CENSOR : redactDeep(v, depth + 1, seen);
  }
  return out;
}

/** `LOG_FORMAT`: JSON lines, or one readable line per record; null: pretty when stderr is a terminal. */
export type LogFormat = 'json' | 'pretty' | null;

/**
 * Where a process's logs go: stderr, never stdout (stdout is for human output and `--json`
 * documents). Written through `process.stderr`, so that a reader closing it (`2>&1 | head`) is
 * one 'error' event there, which the command line ends on quietly (cli/lifetime.ts).
 */
export function stderrDestination(format: LogFormat = null): DestinationStream {
  const pretty = format === 'pretty' || (format === null && process.stderr.isTTY === true);
  return pretty
    ? { write: (line: string) => void process.stderr.write(prettyLine(line)) }
    : { write: (line: string) => void process.stderr.write(line) };
}

/** pino to `destination`, by default stderr in `format` (stderrDestination). */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  format: LogFormat = null,
): Logger {
  const tracing = activeTracing();
  const logger = pino(
    {
      level,
      base: { pid: process.pid },
      // With tracing on (docs/traces.md): a line written inside a span names it.
      ...(tracing ? { mixin: () => tracing.logFields() ?? {} } : {}),
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      serializers: {
        // `formatters.log` has already turned errors into redacted plain objects; this catches any
        // error that reaches the serializer another way.
        err: (err: unknown) => (err instanceof Error ? redactDeep(err) : err),
      },
      formatters: {
        log: (object) => redactDeep(object) as Record<string, unknown>,
        bindings: (bindings) => redactDeep(bindings) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          let all: unknown[] = args;
          // `log.error(err)` takes its message from the error: make it one we can scrub.
          const [first] = all;
          if (first instanceof Error && all.length === 1) all = [{ err: first }, first.message];
          // Interpolate first: a secret split across the template and its argument is whole only
          // in the finished message.
          const at = all.findIndex((a) => typeof a === 'string');
          if (at >= 0 && all.length > at + 1) all = [...all.slice(0, at), formatText(...all.slice(at))];
          const scrubbed = all.map((a) => (typeof a === 'string' ? scrubText(a) : a));
          method.apply(this, scrubbed as Parameters<typeof method>);
        },
      },
    },
    destination ?? stderrDestination(format),
  );
  return scrubChildBindings(logger);
}

/**
 * pino applies `formatters.bindings` to the root's bindings only, not to a child's: a child's are
 * redacted here before pino sees them. Children inherit the override (they are made with the
 * parent as prototype), so grandchildren are covered too.
 */
function scrubChildBindings(logger: Logger): Logger {
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, redactDeep(bindings) as typeof bindings, options);
  } as typeof child;
  return logger;
}
