/** The job states counted per queue. `depth` is what still waits to run: waiting + prioritized + delayed. */
export const COUNTED_JOB_STATES = [
  'waiting',
  'prioritized',
  'delayed',
  'active',
  'completed',
  'failed',
] as const;
export type CountedJobState = (typeof COUNTED_JOB_STATES)[number];

/** One queue's job counts, as the queue monitor reads them and the metrics registry exports them. */
export type QueueCounts = { readonly queue: string; readonly counts: Record<CountedJobState, number> };
