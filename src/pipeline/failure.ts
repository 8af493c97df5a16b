import { splitRuntimeDump } from '../domain/runtime-dump.ts';
import type { FailureKind } from '../service/types.ts';

/** The facts the pipeline needs from a failed service call (the client's ServiceError carries them). */
export type ServiceFailure = {
  readonly kind: FailureKind;
  readonly retryAfterMs?: number | undefined;
  readonly httpStatus?: number | undefined;
  readonly serviceCode?: string | undefined;
  readonly serviceMessage?: string | undefined;
  readonly shortMessage?: string;
  readonly message: string;
};

const KINDS: readonly string[] = ['rejected', 'rate_limited', 'unavailable', 'ambiguous'];

export function asServiceFailure(err: unknown): ServiceFailure | undefined {
  if (typeof err === 'object' && err !== null && KINDS.includes((err as { kind?: unknown }).kind as string)) {
    return err as ServiceFailure;
  }
  return undefined;
}

/**
 * A one-line, secret-free description of a failure, for error messages and evidence. A Solana
 * runtime's debug dump in the service's message is replaced by the error it names (the dump itself
 * goes to the evidence: failureDump).
 */
export function describeFailure(f: ServiceFailure): string {
  const parts: string[] = [f.kind];
  if (f.httpStatus !== undefined) parts.push(`HTTP ${f.httpStatus}`);
  if (f.serviceCode) parts.push(f.serviceCode);
  const msg = f.serviceMessage ?? f.shortMessage ?? f.message;
  if (msg) parts.push(splitRuntimeDump(msg).text.slice(0, 200));
  return parts.join(': ');
}

/** The runtime debug dump the service's message carried (as the client kept it), if any. */
export function failureDump(f: ServiceFailure): string | undefined {
  return splitRuntimeDump(f.serviceMessage ?? f.shortMessage ?? f.message).dump;
}
