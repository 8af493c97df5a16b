import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

/*
 * The batch record's control marks (docs/data-model.md "Batch record": `controls`,
 * `controls_checked`, `controls_refusal`; docs/promises.md "The worker's own controls"): the digest of
 * the controls a batch was enqueued (or retried) under, and of the worker controls that judged it
 * since, with their refusal of the whole batch.
 */

/** A refusal of every row of a batch by a worker's controls (e.g. `over_max_batch`). */
export type BatchRefusal = { readonly code: string; readonly message: string };

export type ControlMarks = {
  readonly controls: string | null;
  readonly checked: string | null;
  readonly refusal: BatchRefusal | null;
};

/** The batch record's fields the marks are read from, in this order (controlMarksOf). */
export const CONTROL_MARK_FIELDS = ['controls', 'controls_checked', 'controls_refusal'] as const;

/** The marks, in one HMGET (batch-hold.ts reads them with the approval gate's facts, in a transfer's run). */
export async function readControlMarks(redis: Redis, prefix: string, batchId: string): Promise<ControlMarks> {
  return controlMarksOf(await redis.hmget(keys(prefix).batch(batchId), ...CONTROL_MARK_FIELDS));
}

/** The marks from CONTROL_MARK_FIELDS' values. */
export function controlMarksOf(values: readonly (string | null | undefined)[]): ControlMarks {
  const [controls, checked, refusal] = values;
  return { controls: controls || null, checked: checked || null, refusal: parseRefusal(refusal ?? null) };
}

/** A stored refusal; null for none, or for one unreadable (the batch is then judged again). */
function parseRefusal(stored: string | null): BatchRefusal | null {
  if (!stored) return null;
  try {
    const r = JSON.parse(stored) as { code?: unknown; message?: unknown };
    if (typeof r.code === 'string' && typeof r.message === 'string')
      return { code: r.code, message: r.message };
  } catch {
    // unreadable: null
  }
  return null;
}

/** A worker judged the batch under `digest`: what it decided is read by the batch's other transfers. */
export async function recordControlsChecked(
  redis: Redis,
  prefix: string,
  batchId: string,
  digest: string,
  refusal: BatchRefusal | null,
): Promise<void> {
  await redis.hset(
    keys(prefix).batch(batchId),
    'controls_checked',
    digest,
    'controls_refusal',
    refusal ? JSON.stringify(refusal) : '',
  );
}

/** The batch's rows were (re-)judged under `digest` (a retry): a worker with other controls judges them again. */
export async function markBatchControls(
  redis: Redis,
  prefix: string,
  batchId: string,
  digest: string,
): Promise<void> {
  const key = keys(prefix).batch(batchId);
  await redis.multi().hset(key, 'controls', digest).hdel(key, 'controls_checked', 'controls_refusal').exec();
}
