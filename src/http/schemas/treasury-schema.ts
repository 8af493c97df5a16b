import type { FastifySchema } from 'fastify';
import { CHAINS } from '../../domain/chains.ts';
import { errorAnswers, isoTime, jsonAnswer, nullable, usdc } from './common.ts';

/** `GET /v1/treasury` (docs/rebalancing.md), for GET /openapi.json. */
const chain = { type: 'string', enum: [...CHAINS] } as const;
const amountOrNull = nullable(usdc);

export const treasurySchema: FastifySchema = {
  operationId: 'getTreasury',
  tags: ['operations'],
  summary: "The treasury's USDC per chain, and the scheduled rebalancing policies",
  description:
    'Per chain: the balance (and per owner), the incoming and outgoing amounts and the position (balance − outgoing + incoming); a chain whose balance cannot be read has its error and null amounts. Per scheduled policy: each chain’s min, target and state on its position now.',
  response: {
    200: jsonAnswer('the treasury now', {
      type: 'object',
      required: ['chains', 'policies'],
      properties: {
        chains: {
          type: 'array',
          items: {
            type: 'object',
            required: ['chain', 'balance', 'owners', 'incoming', 'outgoing', 'position', 'error'],
            properties: {
              chain,
              balance: amountOrNull,
              owners: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['address', 'balance'],
                  properties: { address: { type: 'string' }, balance: usdc },
                },
              },
              incoming: amountOrNull,
              outgoing: amountOrNull,
              position: amountOrNull,
              error: nullable({ type: 'string' }),
            },
          },
        },
        policies: {
          type: 'array',
          items: {
            type: 'object',
            required: [
              'schedule',
              'policy',
              'cron',
              'tz',
              'next_run',
              'last_fired_at',
              'last_batch',
              'last_status',
              'last_error',
              'chains',
            ],
            properties: {
              schedule: { type: 'string' },
              policy: { type: 'string' },
              cron: { type: 'string' },
              tz: { type: 'string', description: 'IANA time zone of the cron' },
              next_run: { ...nullable(isoTime), description: 'the next firing' },
              last_fired_at: {
                ...nullable(isoTime),
                description: 'the last firing (its scheduled time); null before the first',
              },
              last_batch: nullable({ type: 'string' }),
              last_status: nullable({
                type: 'string',
                description:
                  'what the last firing did: enqueued, held, nothing (no move needed or possible), waiting (an earlier run in flight), rejected or error',
              }),
              last_error: nullable({ type: 'string' }),
              chains: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['chain', 'min', 'target', 'state'],
                  properties: {
                    chain,
                    min: amountOrNull,
                    target: usdc,
                    state: { type: ['string', 'null'], enum: ['below_min', 'ok', 'spare', null] },
                  },
                },
              },
            },
          },
        },
      },
    }),
    ...errorAnswers(401),
  },
};

export const uiTreasurySchema: FastifySchema = {
  operationId: 'uiTreasury',
  tags: ['pages'],
  summary: 'The treasury per chain and the scheduled rebalancing policies, for people',
  response: {
    200: { description: 'the treasury page', content: { 'text/html': { schema: { type: 'string' } } } },
  },
};
