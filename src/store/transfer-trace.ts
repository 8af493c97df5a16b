import type { Redis } from 'ioredis';
import { isChain, type Chain } from '../domain/chains.ts';
import type { Keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';

/*
 * The transfer's trace (docs/traces.md): the `trace` field of its record holds the trace id and
 * the id of the trace's root span, 48 hex characters (docs/data-model.md), written when its first
 * traced run starts. Every later run, and every poll of its intent, joins that trace as a child of
 * the root: one transfer, one trace. Written only while tracing is on; absent otherwise.
 */

/** A transfer trace's ids: its trace id (the status document's `trace_id`) and its root span's. */
export type TraceRoot = { readonly traceId: string; readonly spanId: string };

/** What a run's spans are labelled with before the run reads the record: its trace and route. */
export type TraceFacts = {
  readonly root: TraceRoot | undefined;
  readonly from: Chain | undefined;
  readonly to: Chain | undefined;
  readonly state: string | undefined;
};

const STORED = /^([0-9a-f]{32})([0-9a-f]{16})$/;

/** The `trace` field read: undefined when absent or not two ids. */
export function traceRootOf(stored: string | undefined): TraceRoot | undefined {
  const m = STORED.exec(stored ?? '');
  return m ? { traceId: m[1] as string, spanId: m[2] as string } : undefined;
}

/** The trace and route of a transfer, in one read; undefined when it has no record. */
export async function readTraceFacts(
  redis: Redis,
  k: Keys,
  batchId: string,
  transferId: string,
): Promise<TraceFacts | undefined> {
  const [trace, from, to, state] = await redis.hmget(
    k.transfer(batchId, transferId),
    'trace',
    'from',
    'to',
    'state',
  );
  if (!state) return undefined;
  const chain = (v: string | null | undefined) => (v && isChain(v) ? v : undefined);
  return { root: traceRootOf(trace ?? undefined), from: chain(from), to: chain(to), state };
}

const SAVE_TRACE_ROOT = luaScriptFile('trace-root-save.lua');

/** Records the transfer's trace root, unless it has one: the root that stands after (ours or the earlier). */
export async function saveTraceRoot(
  redis: Redis,
  k: Keys,
  at: { readonly batchId: string; readonly transferId: string },
  root: TraceRoot,
): Promise<TraceRoot | undefined> {
  const key = k.transfer(at.batchId, at.transferId);
  const stood = await runScript(redis, SAVE_TRACE_ROOT, [key], [`${root.traceId}${root.spanId}`]);
  return typeof stood === 'string' ? traceRootOf(stood) : undefined;
}
