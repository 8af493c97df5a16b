import { randomUUID } from 'node:crypto';
import { checksumEvmAddress } from '../domain/addresses.ts';
import { isChain, isEvmChain } from '../domain/chains.ts';
import { sandboxFee } from './fee-model.ts';
import { scheduleSettlement } from './intent-status.ts';
import { readPermit } from './permit-check.ts';
import { readAmount, readRecipient } from './request-fields.ts';
import { err, str, type Intent, type LedgerEntry, type Reply, type ServiceState } from './service-state.ts';

export const newIntentId = () => `int_${randomUUID().replace(/-/g, '')}`;

/**
 * `POST /sdk/v1/transfer`: checks the request, then has the source chain's relayer execute the
 * permit and pull the amount into the deposit address. The chain's verdict is the answer: a
 * reverted permit is the refusal, the transferFrom's hash is the `tx_hash`. The recipient is paid
 * on the destination chain when the intent reaches `minted`.
 */
export async function transfer(
  s: ServiceState,
  body: Record<string, unknown>,
  idemKey: string | null,
  receivedAt: number,
): Promise<Reply> {
  const from = str(body, 'from');
  const to = str(body, 'to');
  if (!from || !isEvmChain(from))
    return err(400, 'invalid_chain', 'from must be ETH, BASE, ARB or POLYGON (use build-tx from SOLANA)');
  if (!to || !isChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB, POLYGON or SOLANA');
  const amount = readAmount(body);
  if (typeof amount !== 'bigint') return amount;
  const recipient = readRecipient(to, body['recipient']);
  if (typeof recipient !== 'string') return recipient;
  const fee = sandboxFee(s.config, from, to, amount);
  if (!fee) return err(400, 'amount_below_fee', 'amount does not cover the fee');
  const permit = readPermit(body['permit']);
  if ('code' in permit) return err(400, permit.code, permit.message);
  const outcome = await s.evm[from].transferWithPermit(permit, amount);
  if (!outcome.ok) return err(400, outcome.code, outcome.message);

  const now = Date.now();
  const id = newIntentId();
  const entry: LedgerEntry = {
    kind: 'evm',
    intent_id: id,
    from,
    to,
    amount: amount.toString(),
    net_amount: fee.netReceive.toString(),
    recipient,
    owner: checksumEvmAddress(permit.owner),
    nonce: permit.nonce.toString(),
    idempotency_key: idemKey,
    tx_hash: outcome.txHash,
    permit_tx_hash: outcome.permitTxHash,
    tx_signature: null,
    signed_payload: permit.signature,
    solana_tx_kind: null,
    destination_tx: null,
    at: now,
    received_at: receivedAt,
  };
  const intent: Intent = {
    kind: 'evm',
    id,
    at: now,
    forced: null,
    payout: { to, recipient, amount: fee.netReceive },
    ledger: entry,
    settling: null,
  };
  s.intents.set(id, intent);
  s.ledger.push(entry);
  scheduleSettlement(s, intent, now);
  return { status: 200, body: { intent_id: id, status: 'pending', tx_hash: outcome.txHash } };
}
