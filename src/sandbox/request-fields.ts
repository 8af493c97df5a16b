import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';
import type { Chain } from '../domain/chains.ts';
import { tryParseUsdc } from '../domain/money.ts';
import { err, type Reply } from './service-state.ts';

/** The request's `amount` in base units, or the refusal. */
export function readAmount(body: Record<string, unknown>): bigint | Reply {
  const text = body['amount'];
  if (typeof text !== 'string')
    return err(400, 'invalid_amount', 'amount must be a decimal string, e.g. "10.50"');
  const r = tryParseUsdc(text);
  if (!r.ok) return err(400, 'invalid_amount', `amount ${r.reason}`);
  return r.value;
}

/** The recipient as an address of the destination chain, or the refusal. */
export function readRecipient(to: Chain, recipient: unknown): Reply | string {
  if (typeof recipient !== 'string') return err(400, 'invalid_recipient', 'recipient must be a string');
  const r = to === 'SOLANA' ? checkSolanaAddress(recipient) : checkEvmAddress(recipient);
  if (!r.ok) return err(400, 'invalid_recipient', `recipient ${r.reason}`);
  return r.value;
}
