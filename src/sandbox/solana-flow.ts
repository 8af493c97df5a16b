import { getBase64EncodedWireTransaction, getTransactionDecoder, type SignatureBytes } from '@solana/kit';
import { checkSolanaAddress } from '../domain/addresses.ts';
import { isEvmChain } from '../domain/chains.ts';
import { sandboxFee } from './fee-model.ts';
import { newIntentId } from './evm-transfer.ts';
import { scheduleSettlement } from './intent-status.ts';
import { readAmount, readRecipient } from './request-fields.ts';
import { err, str, type Intent, type Reply, type ServiceState } from './service-state.ts';
import { buildSandboxTransfer } from './solana-transaction.ts';

type Signatures = Record<string, SignatureBytes | null>;

/**
 * `POST /sdk/v1/solana/build-tx`: the transaction the caller signs — fee payer the service, the
 * wallet's USDC TransferChecked into the service's deposit account, a memo naming the intent (so
 * no two built transactions are the same bytes) — or a malicious variant (`solanaTxKind`). The
 * service signs as fee payer now; the wallet is met (funded once) first.
 */
export async function buildTx(s: ServiceState, body: Record<string, unknown>): Promise<Reply> {
  const to = str(body, 'to');
  if (!to || !isEvmChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB or POLYGON');
  const amount = readAmount(body);
  if (typeof amount !== 'bigint') return amount;
  const wallet = body['from_wallet'];
  if (typeof wallet !== 'string') return err(400, 'invalid_from_wallet', 'from_wallet must be a string');
  const w = checkSolanaAddress(wallet);
  if (!w.ok) return err(400, 'invalid_from_wallet', `from_wallet ${w.reason}`);
  const recipient = readRecipient(to, body['recipient']);
  if (typeof recipient !== 'string') return recipient;
  if (!sandboxFee(s.config, 'SOLANA', to, amount))
    return err(400, 'amount_below_fee', 'amount does not cover the fee');
  await s.solana.meet(wallet);
  const id = newIntentId();
  const built = await buildSandboxTransfer({
    kind: s.config.solanaTxKind,
    network: s.network,
    feePayer: s.solana.feePayer,
    wallet,
    amount,
    to,
    recipient,
    destination: s.solana.depositAccount,
    memo: `usdc-batch ${id} ${to} ${recipient}`,
    blockhash: s.solana.blockhash(),
  });
  const decoded = getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64'));
  const signatures: Signatures = { ...decoded.signatures };
  if (s.solana.feePayer in signatures)
    signatures[s.solana.feePayer] = (await s.solana.signAsFeePayer(
      Uint8Array.from(decoded.messageBytes),
    )) as SignatureBytes;
  const now = Date.now();
  const expiresAt = now + s.config.solanaExpiryMs;
  s.intents.set(id, {
    kind: 'solana',
    id,
    at: now,
    forced: null,
    payout: null,
    ledger: null,
    settling: null,
    expiresAt,
    messageBytes: Uint8Array.from(decoded.messageBytes),
    fromWallet: wallet,
    to,
    amount,
    recipient,
    txKind: s.config.solanaTxKind,
    submitted: null,
  });
  return {
    status: 200,
    body: {
      intent_id: id,
      transaction: wireBase64(decoded.messageBytes, signatures),
      expires_at: new Date(expiresAt).toISOString(),
    },
  };
}

/**
 * `POST /sdk/v1/solana/submit`: the service only ever completes the transaction it built (a changed
 * message is refused before anything runs), adds its fee-payer signature if it was stripped, and
 * hands it to the runtime: a missing or wrong signature, a replay, a spent balance are LiteSVM's
 * refusals. The same transaction again for an intent that executed answers as the first time,
 * without reaching the runtime: it never executes twice.
 */
export async function submit(
  s: ServiceState,
  body: Record<string, unknown>,
  idemKey: string | null,
  receivedAt: number,
): Promise<Reply> {
  const id = str(body, 'intent_id');
  const signed = str(body, 'signed_transaction');
  if (!id) return err(400, 'invalid_intent_id', 'intent_id must be a string');
  if (!signed) return err(400, 'invalid_transaction', 'signed_transaction must be a base64 string');
  const intent = s.intents.get(id);
  if (!intent || intent.kind !== 'solana') return err(404, 'intent_not_found', 'no such intent');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(signed))
    return err(400, 'invalid_transaction', 'signed_transaction is not base64');
  let decoded: ReturnType<ReturnType<typeof getTransactionDecoder>['decode']>;
  try {
    decoded = getTransactionDecoder().decode(Buffer.from(signed, 'base64'));
  } catch {
    return err(400, 'invalid_transaction', 'signed_transaction is not a Solana transaction');
  }
  if (!sameBytes(decoded.messageBytes, intent.messageBytes))
    return err(
      400,
      'transaction_modified',
      'the transaction message differs from the one built for this intent',
    );
  const signatures: Signatures = { ...decoded.signatures };
  const payer = s.solana.feePayer;
  if (payer in signatures && (signatures[payer] === null || isZero(signatures[payer] as Uint8Array)))
    signatures[payer] = (await s.solana.signAsFeePayer(
      Uint8Array.from(decoded.messageBytes),
    )) as SignatureBytes;
  const wire = wireBase64(decoded.messageBytes, signatures);
  // The transaction that executed, again: answered as the first time, never run again. The runtime
  // alone would not always refuse it: LiteSVM remembers only its last 32 transactions, and the
  // sandbox's blockhash never expires (a chain refuses a signature it processed for as long as its
  // blockhash is valid, and an expired blockhash after that).
  if (intent.submitted?.wire === wire) return intent.submitted.reply;
  if (!intent.submitted && Date.now() > intent.expiresAt)
    return err(400, 'intent_expired', 'the transaction has expired; build a new one');

  const outcome = await s.solana.execute(Buffer.from(wire, 'base64'));
  if (!outcome.ok) {
    if (outcome.code === 'already_processed' && intent.submitted) return intent.submitted.reply;
    return err(400, outcome.code, outcome.message);
  }
  const now = Date.now();
  const fee = sandboxFee(s.config, 'SOLANA', intent.to, intent.amount);
  const net = fee ? fee.netReceive : intent.amount;
  const reply: Reply = {
    status: 200,
    body: { intent_id: id, status: 'pending', tx_signature: outcome.signature },
  };
  intent.submitted = { at: now, reply, wire };
  intent.payout = { to: intent.to, recipient: intent.recipient, amount: net };
  intent.ledger = {
    kind: 'solana',
    intent_id: id,
    from: 'SOLANA',
    to: intent.to,
    amount: intent.amount.toString(),
    net_amount: net.toString(),
    recipient: intent.recipient,
    owner: intent.fromWallet,
    nonce: null,
    idempotency_key: idemKey,
    tx_hash: null,
    permit_tx_hash: null,
    tx_signature: outcome.signature,
    signed_payload: signed,
    solana_tx_kind: intent.txKind,
    destination_tx: null,
    at: now,
    received_at: receivedAt,
  };
  s.ledger.push(intent.ledger);
  scheduleSettlement(s, intent as Intent, now);
  return reply;
}

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const isZero = (sig: Uint8Array) => sig.every((b) => b === 0);

function wireBase64(messageBytes: ArrayLike<number>, signatures: Signatures): string {
  return getBase64EncodedWireTransaction({ messageBytes, signatures } as unknown as Parameters<
    typeof getBase64EncodedWireTransaction
  >[0]);
}
