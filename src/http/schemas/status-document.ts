import { TRANSFER_ROADS } from '../../domain/roads.ts';
import { TRANSFER_STATES } from '../../domain/transfer.ts';
import type { BatchStatus } from '../../present/batch-status.ts';
import type { BatchSummary } from '../../present/batch-summary.ts';
import type { TransferView } from '../../present/transfer-view.ts';
import { isoTime, nullable, usdc } from './common.ts';

/* The status document of docs/http-api.md (`GET /v1/batches/:id`, `status --json`, callbacks). */

const counts = {
  type: 'object',
  required: [...TRANSFER_STATES],
  properties: Object.fromEntries(TRANSFER_STATES.map((s) => [s, { type: 'integer', minimum: 0 }])),
  additionalProperties: true,
} as const;

const money = {
  type: 'object',
  required: ['amount', 'fee', 'net_receive'],
  properties: { amount: usdc, fee: usdc, net_receive: usdc },
  additionalProperties: true,
} as const;

export const transferView = {
  $id: 'Transfer',
  type: 'object',
  required: [
    'id', 'line', 'from', 'to', 'amount', 'recipient', 'memo', 'state', 'intent_id', 'intent_status',
    'tx_hash', 'tx_signature', 'owner', 'new_recipient', 'fee', 'net_receive', 'attempts', 'error', 'evidence', 'trace_id', 'updated_at', 'cctp',
  ],
  properties: {
    id: { type: 'string', description: 'the CSV id, or one derived from the line' },
    line: { type: 'integer' },
    from: { type: 'string', enum: ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA'] },
    to: { type: 'string', enum: ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA'] },
    amount: usdc,
    recipient: { type: 'string' },
    memo: nullable({ type: 'string' }),
    state: { type: 'string', enum: [...TRANSFER_STATES] },
    intent_id: nullable({ type: 'string' }),
    intent_status: nullable({ type: 'string', description: 'pending, detected, minted, complete, failed' }),
    tx_hash: nullable({ type: 'string' }),
    tx_signature: nullable({ type: 'string' }),
    owner: nullable({ type: 'string', description: 'the EVM owner whose permit pays it (null before one is chosen, and for SOLANA-source rows)' }),
    new_recipient: { type: 'boolean', description: 'its address was not in the address book when enqueued' },
    fee: {
      type: ['object', 'null'],
      description: 'the fee estimate; null before the transfer was estimated (never 0.00 for not known)',
      required: ['total', 'platform', 'gas'],
      properties: { total: usdc, platform: usdc, gas: usdc },
      additionalProperties: true,
    },
    net_receive: { ...nullable(usdc), description: 'null while fee is' },
    attempts: { type: 'integer', minimum: 0 },
    error: {
      type: ['object', 'null'],
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
      additionalProperties: true,
    },
    evidence: {
      type: 'array',
      items: { type: 'string' },
      description: 'what the worker saw that decided its fate when it was not simply accepted (a lost answer, a refusal, a chain reading, a deadline passed), oldest first, each "<ISO time> <what>"; empty for a plain submitted',
    },
    wait_reason: nullable({ type: 'string', description: 'why a queued transfer waits' }),
    trace_id: nullable({
      type: 'string',
      pattern: '^[0-9a-f]{32}$',
      description: 'its OpenTelemetry trace (docs/traces.md): null when tracing was off while it ran',
    }),
    updated_at: nullable(isoTime),
    cctp: {
      type: ['object', 'null'],
      description: 'the CCTP road (docs/cctp.md): null on the service road',
      required: ['finality', 'max_fee', 'burn_tx', 'message_nonce', 'attestation', 'mint_tx'],
      properties: {
        finality: { type: 'integer', enum: [1000, 2000], description: 'the burn\'s minFinalityThreshold: 1000 Fast, 2000 Standard' },
        max_fee: { ...nullable(usdc), description: 'the burn\'s maxFee; null before the estimate' },
        burn_tx: nullable({ type: 'string', description: 'the burn\'s transaction (its latest version until mined)' }),
        message_nonce: nullable({ type: 'string', description: 'the attested message\'s nonce (bytes32), once attested' }),
        attestation: { type: ['string', 'null'], enum: ['pending', 'complete', 'expired', null] },
        mint_tx: nullable({ type: 'string', description: 'our mint\'s transaction; null before, and when another minted the message' }),
      },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
} as const; // prettier-ignore

export const batchSummary = {
  $id: 'BatchSummary',
  type: 'object',
  required: ['batch_id', 'created_at', 'source', 'via', 'submitted_by', 'complete', 'settled', 'held', 'held_reason', 'approval_digest', 'approvals', 'approvals_required', 'counts', 'totals'],
  properties: {
    batch_id: { type: 'string' },
    created_at: nullable(isoTime),
    source: { type: 'string', enum: ['csv', 'http', 'schedule', 'rebalance'] },
    via: { type: 'string', enum: [...TRANSFER_ROADS], description: 'the road its transfers take: the transfer service, or Circle\'s CCTP v2 directly (Standard or Fast); docs/cctp.md' },
    submitted_by: nullable({ type: 'string', description: 'who enqueued it: an HTTP credential\'s name, cli:<name>, schedule:<name>; null for a batch enqueued before this was recorded' }),
    complete: { type: 'boolean', description: 'every transfer is final' },
    settled: {
      type: ['boolean', 'null'],
      description: 'complete, and every submitted intent has a final status; null where the service has no status route',
    },
    held: { type: 'boolean' },
    held_reason: nullable({ type: 'string' }),
    approval_digest: nullable({
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'while held: SHA-256 of the lines "id,from,to,amount,recipient\\n" of its queued transfers in line order (what an approval names); null when not held',
    }),
    approvals: {
      type: 'array',
      description: 'the approvals of its current (or last) hold, oldest first; only those whose digest is approval_digest count',
      items: {
        type: 'object',
        required: ['name', 'at', 'digest'],
        properties: { name: { type: 'string' }, at: isoTime, digest: { type: 'string', pattern: '^[0-9a-f]{64}$' } },
        additionalProperties: true,
      },
    },
    approvals_required: { type: 'integer', minimum: 1, description: 'distinct approvers a hold needs, never its submitter' },
    counts,
    intents: {
      type: 'object',
      description: 'the submitted transfers\' intents: final (complete, failed), untracked (no status route), open; they add up to counts.submitted',
      required: ['complete', 'failed', 'untracked', 'open'],
      properties: {
        complete: { type: 'integer', minimum: 0 },
        failed: { type: 'integer', minimum: 0, description: 'intents that failed after the transfer was submitted' },
        untracked: { type: 'integer', minimum: 0 },
        open: { type: 'integer', minimum: 0 },
      },
      additionalProperties: true,
    },
    totals: {
      type: 'object',
      description:
        'the batch as planned (every row, recorded estimates); fee and net_receive are null while a transfer that may still be sent (queued, held, in progress) has no estimate; paid: submitted transfers only',
      required: ['amount', 'fee', 'net_receive', 'paid'],
      properties: { amount: usdc, fee: nullable(usdc), net_receive: nullable(usdc), paid: money },
      additionalProperties: true,
    },
  },
  additionalProperties: true,
} as const; // prettier-ignore

export const statusDocument = {
  $id: 'StatusDocument',
  allOf: [{ $ref: 'BatchSummary#' }],
  type: 'object',
  required: ['paused', 'transfers', 'screening'],
  properties: {
    screening: {
      type: 'object',
      description:
        'the sanctions lists the workers screen with (docs/screening.md): each file, its date of issue and addresses; stale: a list is older than SCREENING_MAX_AGE (nothing is signed); onchain: SCREENING_ONCHAIN',
      required: ['lists', 'stale', 'onchain'],
      properties: {
        lists: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'date', 'addresses'],
            properties: {
              name: { type: 'string', description: 'the file, as SCREENING_LISTS names it' },
              date: { type: 'string', description: 'its date of issue, YYYY-MM-DD' },
              addresses: { type: 'integer', minimum: 0 },
            },
            additionalProperties: true,
          },
        },
        stale: { type: 'boolean' },
        onchain: { type: 'boolean' },
      },
      additionalProperties: true,
    },
    paused: {
      type: ['object', 'null'],
      description: 'processing is paused (usdc-batch pause): since when and by whom; null while it runs',
      required: ['since', 'by'],
      properties: { since: isoTime, by: nullable({ type: 'string', description: 'cli:<name>' }) },
      additionalProperties: true,
    },
    transfers: { type: 'array', items: { $ref: 'Transfer#' } },
    next_cursor: {
      type: ['string', 'null'],
      description: 'the last line of this page: pass it as ?cursor= for the next; null on the last page',
    },
  },
  additionalProperties: true,
} as const;

/*
 * The schema is checked against the one shape the presenter builds (src/present): a field added to
 * one and not the other, or a required field the type does not have, fails `npm run typecheck`.
 */
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never]
  ? true
  : { onlyInSchema: Exclude<keyof A, keyof B>; onlyInType: Exclude<keyof B, keyof A> };
type Within<A, B> = [Exclude<A, keyof B>] extends [never] ? true : { notInType: Exclude<A, keyof B> };
type OwnFields = Omit<BatchStatus, keyof BatchSummary>;

export const schemaMatchesPresenter: readonly true[] = [
  true satisfies SameKeys<typeof transferView.properties, TransferView>,
  true satisfies Within<(typeof transferView.required)[number], TransferView>,
  true satisfies SameKeys<typeof batchSummary.properties, BatchSummary>,
  true satisfies Within<(typeof batchSummary.required)[number], BatchSummary>,
  true satisfies SameKeys<typeof statusDocument.properties, OwnFields>,
  true satisfies Within<(typeof statusDocument.required)[number], OwnFields>,
];
