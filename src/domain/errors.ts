/**
 * One base error for the whole project (after viem's BaseError): a stable namespaced `code`, a
 * short message a person can act on, optional details, and the chained `cause`.
 * Messages never contain secrets: callers pass only public facts into them.
 */
export type ErrorOptions = {
  readonly details?: string;
  readonly cause?: unknown;
  readonly meta?: Readonly<Record<string, unknown>>;
};

export class UsdcBatchError extends Error {
  override name = 'UsdcBatchError';
  readonly code: string;
  readonly shortMessage: string;
  readonly details: string | undefined;
  readonly meta: Readonly<Record<string, unknown>>;

  constructor(code: string, shortMessage: string, options: ErrorOptions = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, {
      cause: options.cause,
    });
    this.code = code;
    this.shortMessage = shortMessage;
    this.details = options.details;
    this.meta = options.meta ?? {};
  }
}

/** Input that a user supplied is wrong (CLI exit 1 or 2, HTTP 4xx). */
export class ValidationError extends UsdcBatchError {
  override name = 'ValidationError';
}

export type ConfigProblem = { variable: string; message: string; missing?: boolean };

/** Configuration is wrong or missing: every problem is listed; CLI exit 2. */
export class ConfigError extends UsdcBatchError {
  override name = 'ConfigError';
  /** `missing`: a required setting that is not set at all (not one set wrong). */
  readonly problems: readonly ConfigProblem[];
  constructor(problems: readonly ConfigProblem[]) {
    super(
      'USDC_CONFIG_INVALID',
      `Configuration is invalid:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

/** A batch id reused with other content (CLI exit 3, HTTP 409). */
export class ConflictError extends UsdcBatchError {
  override name = 'ConflictError';
}

export function errorMessage(err: unknown): string {
  if (err instanceof UsdcBatchError) return err.shortMessage;
  if (err instanceof Error) return err.message;
  return String(err);
}
