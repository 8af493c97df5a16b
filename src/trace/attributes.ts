/*
 * The names a transfer's trace uses (docs/traces.md): span names and attributes.
 * No imports: the queue's span code and the tests share them.
 */

export const SPAN = {
  /** The transfer trace's root: made when its first traced run starts, linked to what enqueued it. */
  transfer: 'usdc_batch.transfer',
  /** One run of the transfer's job (a BullMQ job run, a child of the root). */
  run: 'usdc_batch.run',
  /** One poll of its submitted intent's status. */
  follow: 'usdc_batch.follow',
  /** The CLI's `enqueue`. */
  enqueue: 'usdc_batch.enqueue',
} as const;

/** A step's span name: `usdc_batch.estimate`, … (`send` is `submit` for a SOLANA source). */
export const stepSpanName = (step: string): string => `usdc_batch.${step}`;

export const ATTR = {
  batchId: 'usdc_batch.batch_id',
  transferId: 'usdc_batch.transfer_id',
  /** The source chain. */
  chain: 'usdc_batch.chain',
  to: 'usdc_batch.to',
  state: 'usdc_batch.state',
  intentId: 'usdc_batch.intent_id',
  intentStatus: 'usdc_batch.intent_status',
  errorCode: 'usdc_batch.error_code',
  /** On a run: its job's id, the `retry` round it belongs to, BullMQ's count of its starts. */
  jobId: 'usdc_batch.job_id',
  round: 'usdc_batch.round',
  jobAttempt: 'usdc_batch.job_attempt',
  /** On a run: whether it began the transfer's trace (false: a later run of the same transfer). */
  firstRun: 'usdc_batch.first_run',
  /** On a run that handed its job back to the queue: what it waits for. */
  waitReason: 'usdc_batch.wait_reason',
  /** On a send/submit: the send of the current payload it is (1, 2, …), and whether it is a re-send. */
  sendNumber: 'usdc_batch.send_number',
  resend: 'usdc_batch.resend',
  /** On a send/submit: how the service answered (`accepted`, `ambiguous`, `rejected`, …). */
  answer: 'usdc_batch.answer',
  /** On an event: the job log's line. */
  message: 'usdc_batch.message',
  /** On the span that enqueued a batch: its size. */
  transfers: 'usdc_batch.transfers',
} as const;
