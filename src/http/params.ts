import type { FastifyRequest } from 'fastify';
import { TRANSFER_STATES, type TransferState } from '../domain/transfer.ts';
import { BATCH_ID_PATTERN } from '../domain/ids.ts';
import { badQuery, notFound } from './http-errors.ts';

/** The `:id` of a `/v1/batches/:id…` route; an id no batch can have is answered like an unknown one. */
export function batchIdParam(request: FastifyRequest): string {
  const id = (request.params as Record<string, unknown>)['id'];
  if (typeof id !== 'string' || !BATCH_ID_PATTERN.test(id)) throw notFound('no such batch');
  return id;
}

export function queryOf(request: FastifyRequest): Record<string, unknown> {
  return (request.query ?? {}) as Record<string, unknown>;
}

/** A positive integer query parameter within `max`, or `fallback` when absent. */
export function intParam(
  query: Record<string, unknown>,
  name: string,
  { fallback, max }: { fallback: number; max: number },
): number {
  const v = query[name];
  if (v === undefined || v === '') return fallback;
  if (typeof v !== 'string' || !/^[0-9]{1,9}$/.test(v) || Number(v) < 1 || Number(v) > max) {
    throw badQuery(`${name} must be an integer from 1 to ${max}`);
  }
  return Number(v);
}

export function stateParam(query: Record<string, unknown>): TransferState | undefined {
  const v = query['state'];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !(TRANSFER_STATES as readonly string[]).includes(v)) {
    throw badQuery(`state must be one of ${TRANSFER_STATES.join(', ')}`);
  }
  return v as TransferState;
}

/** The paging cursor of the status document: the last line of the previous page. */
export function cursorParam(query: Record<string, unknown>): string | undefined {
  const v = query['cursor'];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !/^[0-9]{1,12}$/.test(v)) {
    throw badQuery('cursor must be the next_cursor of the previous page');
  }
  return v;
}
