import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  address,
  createKeyPairFromPrivateKeyBytes,
  getBase64EncodedWireTransaction,
  getAddressFromPublicKey,
  getPublicKeyFromAddress,
  getTransactionDecoder,
  signBytes,
  verifySignature,
  type SignatureBytes,
} from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { keccak256, type Hex } from 'viem';
import { checkEvmAddress, checkSolanaAddress, checksumEvmAddress } from '../domain/addresses.ts';
import { encodeBase58 } from '../domain/base58.ts';
import {
  isChain,
  isEvmChain,
  isValidRoute,
  EVM_CHAINS,
  SOLANA_USDC_MINT,
  USDC_EVM,
  type Chain,
  type EvmChain,
  type Network,
} from '../domain/chains.ts';
import { formatUsdc, tryParseUsdc } from '../domain/money.ts';
import { sandboxFee } from './fee-model.ts';
import { pickFault, seededRandom } from './faults.ts';
import { readPermit, recoverPermitSigner } from './permit-check.ts';
import { handleRpc, headBlock, blockTimeMs } from './rpc.ts';
import {
  applyConfigPatch,
  DEFAULT_SANDBOX_CONFIG,
  type FaultKind,
  type FaultOp,
  type SandboxConfig,
  type SandboxConfigPatch,
} from './sandbox-config.ts';
import { buildSandboxTransfer, type SolanaTxKind } from './solana-transaction.ts';

export const SANDBOX_DEFAULT_API_KEY = 'sk_sandbox_local';
/** The spender permits must name unless `--spender` says otherwise (an address with no known key). */
export const SANDBOX_DEFAULT_SPENDER = checksumEvmAddress('0x5a4db0c5a4db0c5a4db0c5a4db0c5a4db0c5a4d0');
const DEFAULT_FEE_PAYER_SEED = 'usdc-batch sandbox: solana fee payer';

export type SandboxOptions = Partial<SandboxConfig> & {
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  readonly apiKey?: string;
  readonly spender?: string;
  readonly network?: Network;
  /** Bearer token of `POST /plants`; default the API key. */
  readonly plantsToken?: string;
  /** Seed of the sandbox's Solana fee-payer key (a fixed default, so its address is stable). */
  readonly solanaFeePayerSeed?: string;
};

/** One payment the sandbox executed. Amounts are micro-USDC decimal strings. */
export type LedgerEntry = {
  readonly kind: 'evm' | 'solana';
  readonly intent_id: string;
  readonly from: Chain;
  readonly to: Chain;
  readonly amount: string;
  readonly recipient: string;
  /** The permit owner (EVM) or `from_wallet` (Solana). */
  readonly owner: string;
  /** The permit nonce (EVM); null for Solana. */
  readonly nonce: string | null;
  readonly idempotency_key: string | null;
  readonly tx_hash: string | null;
  readonly tx_signature: string | null;
  /** Solana: the kind of transaction that was built and signed (a malicious one means the policy let it through). */
  readonly solana_tx_kind: SolanaTxKind | null;
  readonly at: number;
};

export type SandboxAdmin = {
  config(): SandboxConfig;
  configure(patch: SandboxConfigPatch): SandboxConfig;
  /** Clears ledger, nonces, intents, idempotency records and plants; config back to the options. */
  reset(): void;
  /** As if the owner had signed `by` permits elsewhere: the expected nonce and the chain's move at once. */
  bumpNonce(chain: EvmChain, owner: string, by?: number): bigint;
  /**
   * Uses the owner's next `count` permit nonces now, as a treasurer signing elsewhere would: the
   * service refuses them from now on; the RPC shows them once its lag has passed. Returns them.
   */
  outsidePermit(chain: EvmChain, owner: string, count?: number): bigint[];
  /** The next nonce the sandbox accepts for (chain, owner). */
  expectedNonce(chain: EvmChain, owner: string): bigint;
  /** `nonces(owner)` as the RPC reports it now (at its lagging head). */
  chainNonce(chain: EvmChain, owner: string): bigint;
  /** Forces an intent's status (e.g. `failed`); false when the intent is unknown. */
  setIntentStatus(intentId: string, status: string): boolean;
  /**
   * When each transfer-service request arrived (ms) and for which operation, oldest first: what a
   * service-side rate limiter sees. The last 100,000 are kept.
   */
  requests(): readonly { readonly op: string; readonly at: number }[];
};

export type Sandbox = {
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly apiKey: string;
  readonly spender: string;
  readonly network: Network;
  /** The sandbox's Solana fee payer (base58). */
  readonly solanaFeePayer: string;
  /** The USDC token account built transactions pay into. */
  readonly solanaDepositAccount: string;
  rpcUrl(chain: EvmChain): string;
  ledger(): readonly LedgerEntry[];
  readonly admin: SandboxAdmin;
  close(): Promise<void>;
};

type Reply = { status: number; body: unknown; headers?: Record<string, string> };
type Intent =
  | { kind: 'evm'; id: string; at: number; forced: string | null }
  | {
      kind: 'solana';
      id: string;
      at: number;
      forced: string | null;
      expiresAt: number;
      messageBytes: Uint8Array;
      fromWallet: string;
      to: EvmChain;
      amount: bigint;
      recipient: string;
      txKind: SolanaTxKind;
      submitted: { at: number; reply: Reply } | null;
    };
/**
 * One owner's permit nonces on one chain: `external` counts bumps (there before any block the RPC
 * shows), `uses` every nonce used since, oldest first: permits the service executed (with their
 * amount) and outside uses (amount 0). The service sees them all at once; a block sees those made
 * up to its time.
 */
type NonceState = { external: bigint; uses: { at: number; amount: bigint }[] };

const STATUS_STEPS = ['pending', 'detected', 'minted', 'complete'] as const;
const MAX_BODY = 1_000_000;
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

const err = (status: number, code: string, message: string): Reply => ({
  status,
  body: { error: { code, message } },
});

function str(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  return typeof v === 'string' ? v : undefined;
}

/**
 * A strict HTTP implementation of the transfer service (spec §4, PRODUCT.md §5), with per-chain
 * JSON-RPC, fault injection and a ledger. Built by this function and started at once; tests and the
 * CLI both use it. Admin routes (`/__admin/*`) answer loopback clients only.
 */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const apiKey = options.apiKey ?? SANDBOX_DEFAULT_API_KEY;
  const plantsToken = options.plantsToken ?? apiKey;
  const network: Network = options.network ?? 'testnet';
  const spenderCheck = checkEvmAddress(options.spender ?? SANDBOX_DEFAULT_SPENDER);
  if (!spenderCheck.ok) throw new TypeError(`spender ${spenderCheck.reason}`);
  const spender = spenderCheck.value;
  const {
    port: _p,
    host: _h,
    apiKey: _a,
    spender: _s,
    network: _n,
    plantsToken: _t,
    solanaFeePayerSeed,
    ...configOptions
  } = options;
  const initialConfig = applyConfigPatch(DEFAULT_SANDBOX_CONFIG, configOptions);
  let config = initialConfig;
  let random = seededRandom(config.seed);

  const feePayerKey = await createKeyPairFromPrivateKeyBytes(
    createHash('sha256')
      .update(solanaFeePayerSeed ?? DEFAULT_FEE_PAYER_SEED)
      .digest(),
  );
  const solanaFeePayer = await getAddressFromPublicKey(feePayerKey.publicKey);
  const [solanaDepositAccount] = await findAssociatedTokenPda({
    owner: solanaFeePayer,
    mint: address(SOLANA_USDC_MINT[network]),
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });

  let ledger: LedgerEntry[] = [];
  let requestLog: { op: string; at: number }[] = [];
  let intents = new Map<string, Intent>();
  let nonces = new Map<string, NonceState>();
  let idempotency = new Map<string, { fingerprint: string; reply: Reply }>();
  let plants = new Map<string, unknown>();
  let blockHeight = 1_000n;

  const nonceState = (chain: EvmChain, owner: string): NonceState => {
    const key = `${chain}:${owner.toLowerCase()}`;
    let s = nonces.get(key);
    if (!s) {
      s = { external: 0n, uses: [] };
      nonces.set(key, s);
    }
    return s;
  };
  const expectedNonce = (chain: EvmChain, owner: string) => {
    const s = nonceState(chain, owner);
    return s.external + BigInt(s.uses.length);
  };
  const usesUpTo = (chain: EvmChain, owner: string, atMs: number) =>
    nonceState(chain, owner).uses.filter((u) => u.at <= atMs);
  const nonceAt = (chain: EvmChain, owner: string, atMs: number) =>
    nonceState(chain, owner).external + BigInt(usesUpTo(chain, owner, atMs).length);
  const treasury = () => {
    const r = tryParseUsdc(config.treasuryBalance, { allowZero: true });
    return r.ok ? r.value : 0n;
  };
  const balanceAt = (chain: EvmChain, owner: string, atMs: number) =>
    usesUpTo(chain, owner, atMs).reduce((left, u) => left - u.amount, treasury());
  /** What the service checks against: the chain as it is now. */
  const balanceOf = (chain: EvmChain, owner: string) => balanceAt(chain, owner, Infinity);
  const rpcState = {
    network,
    lagMs: () => config.rpcNonceLagMs,
    nonceAt,
    balanceAt,
  };
  const chainNonce = (chain: EvmChain, owner: string) =>
    nonceAt(chain, owner, blockTimeMs(headBlock(Date.now(), config.rpcNonceLagMs)));

  const statusOf = (intent: Intent, now: number): string => {
    if (intent.forced) return intent.forced;
    if (intent.kind === 'solana' && !intent.submitted) return now > intent.expiresAt ? 'failed' : 'pending';
    const since = intent.kind === 'solana' && intent.submitted ? intent.submitted.at : intent.at;
    const step = config.statusStepMs <= 0 ? 3 : Math.floor((now - since) / config.statusStepMs);
    return STATUS_STEPS[Math.min(Math.max(step, 0), 3)] as string;
  };

  // ---- operations ------------------------------------------------------------------------

  function validateAmount(body: Record<string, unknown>): bigint | Reply {
    const text = body['amount'];
    if (typeof text !== 'string')
      return err(400, 'invalid_amount', 'amount must be a decimal string, e.g. "10.50"');
    const r = tryParseUsdc(text);
    if (!r.ok) return err(400, 'invalid_amount', `amount ${r.reason}`);
    return r.value;
  }

  function estimate(body: Record<string, unknown>): Reply {
    const from = str(body, 'from');
    const to = str(body, 'to');
    if (!from || !isChain(from))
      return err(400, 'invalid_chain', 'from must be ETH, BASE, ARB, POLYGON or SOLANA');
    if (!to || !isChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB, POLYGON or SOLANA');
    if (!isValidRoute(from, to)) return err(400, 'invalid_route', 'from SOLANA, to must be an EVM chain');
    const amount = validateAmount(body);
    if (typeof amount !== 'bigint') return amount;
    const fee = sandboxFee(config, from, to, amount);
    if (!fee) return err(400, 'amount_below_fee', 'amount does not cover the fee');
    return {
      status: 200,
      body: {
        amount: formatUsdc(amount),
        fee: { total: formatUsdc(fee.total), platform: formatUsdc(fee.platform), gas: formatUsdc(fee.gas) },
        net_receive: formatUsdc(fee.netReceive),
      },
    };
  }

  function checkRecipient(to: Chain, recipient: unknown): Reply | string {
    if (typeof recipient !== 'string') return err(400, 'invalid_recipient', 'recipient must be a string');
    const r = to === 'SOLANA' ? checkSolanaAddress(recipient) : checkEvmAddress(recipient);
    if (!r.ok) return err(400, 'invalid_recipient', `recipient ${r.reason}`);
    return r.value;
  }

  async function transfer(body: Record<string, unknown>, idemKey: string | null): Promise<Reply> {
    const from = str(body, 'from');
    const to = str(body, 'to');
    if (!from || !isEvmChain(from))
      return err(400, 'invalid_chain', 'from must be ETH, BASE, ARB or POLYGON (use build-tx from SOLANA)');
    if (!to || !isChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB, POLYGON or SOLANA');
    const amount = validateAmount(body);
    if (typeof amount !== 'bigint') return amount;
    const recipient = checkRecipient(to, body['recipient']);
    if (typeof recipient !== 'string') return recipient;
    const fee = sandboxFee(config, from, to, amount);
    if (!fee) return err(400, 'amount_below_fee', 'amount does not cover the fee');
    const permit = readPermit(body['permit']);
    if ('code' in permit) return err(400, permit.code, permit.message);
    if (permit.value !== amount)
      return err(400, 'permit_value_mismatch', 'permit.value is not the amount in base units');
    if (permit.spender.toLowerCase() !== spender.toLowerCase())
      return err(400, 'permit_spender_mismatch', `permit.spender must be ${spender}`);
    if (permit.deadline <= BigInt(Math.floor(Date.now() / 1000)))
      return err(400, 'permit_expired', 'permit.deadline has passed');
    const signer = await recoverPermitSigner(network, from, permit);
    if (!signer || signer.toLowerCase() !== permit.owner.toLowerCase())
      return err(400, 'permit_invalid_signature', 'the permit signature does not recover to permit.owner');
    const expected = expectedNonce(from, permit.owner);
    if (permit.nonce < expected) return err(400, 'permit_nonce_used', 'permit.nonce was already used');
    if (permit.nonce > expected)
      return err(400, 'permit_nonce_invalid', 'permit.nonce is not the owner’s current nonce');
    if (balanceOf(from, permit.owner) < amount)
      return err(400, 'insufficient_balance', 'the owner’s USDC balance is too low');
    const now = Date.now();
    nonceState(from, permit.owner).uses.push({ at: now, amount });
    const id = `int_${randomUUID().replace(/-/g, '')}`;
    const txHash = keccak256(
      `0x${USDC_EVM[network][from].chainId.toString(16).padStart(8, '0')}${permit.signature.slice(2)}` as Hex,
    );
    intents.set(id, { kind: 'evm', id, at: now, forced: null });
    ledger.push({
      kind: 'evm',
      intent_id: id,
      from,
      to,
      amount: amount.toString(),
      recipient,
      owner: checksumEvmAddress(permit.owner),
      nonce: permit.nonce.toString(),
      idempotency_key: idemKey,
      tx_hash: txHash,
      tx_signature: null,
      solana_tx_kind: null,
      at: now,
    });
    return { status: 200, body: { intent_id: id, status: 'pending', tx_hash: txHash } };
  }

  async function buildTx(body: Record<string, unknown>): Promise<Reply> {
    const to = str(body, 'to');
    if (!to || !isEvmChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB or POLYGON');
    const amount = validateAmount(body);
    if (typeof amount !== 'bigint') return amount;
    const wallet = body['from_wallet'];
    if (typeof wallet !== 'string') return err(400, 'invalid_from_wallet', 'from_wallet must be a string');
    const w = checkSolanaAddress(wallet);
    if (!w.ok) return err(400, 'invalid_from_wallet', `from_wallet ${w.reason}`);
    const recipient = checkRecipient(to, body['recipient']);
    if (typeof recipient !== 'string') return recipient;
    if (!sandboxFee(config, 'SOLANA', to, amount))
      return err(400, 'amount_below_fee', 'amount does not cover the fee');
    blockHeight += 1n;
    const built = await buildSandboxTransfer({
      kind: config.solanaTxKind,
      network,
      feePayer: solanaFeePayer,
      wallet,
      amount,
      to,
      recipient,
      destination: solanaDepositAccount,
      blockhash: encodeBase58(createHash('sha256').update(randomUUID()).digest()),
      lastValidBlockHeight: blockHeight + 150n,
    });
    // The sandbox signs as fee payer now; the caller adds only its own signature.
    const decoded = getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64'));
    const signatures: Record<string, SignatureBytes | null> = { ...decoded.signatures };
    if (solanaFeePayer in signatures)
      signatures[solanaFeePayer] = await signBytes(feePayerKey.privateKey, decoded.messageBytes);
    const transaction = wireBase64(decoded.messageBytes, signatures);
    const id = `int_${randomUUID().replace(/-/g, '')}`;
    const now = Date.now();
    const expiresAt = now + config.solanaExpiryMs;
    intents.set(id, {
      kind: 'solana',
      id,
      at: now,
      forced: null,
      expiresAt,
      messageBytes: Uint8Array.from(decoded.messageBytes),
      fromWallet: wallet,
      to,
      amount,
      recipient,
      txKind: config.solanaTxKind,
      submitted: null,
    });
    return {
      status: 200,
      body: { intent_id: id, transaction, expires_at: new Date(expiresAt).toISOString() },
    };
  }

  async function submit(body: Record<string, unknown>, idemKey: string | null): Promise<Reply> {
    const id = str(body, 'intent_id');
    const signed = str(body, 'signed_transaction');
    if (!id) return err(400, 'invalid_intent_id', 'intent_id must be a string');
    if (!signed) return err(400, 'invalid_transaction', 'signed_transaction must be a base64 string');
    const intent = intents.get(id);
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
    const signatures: Record<string, SignatureBytes | null> = { ...decoded.signatures };
    for (const [signer, sig] of Object.entries(signatures)) {
      if (signer === solanaFeePayer && (sig === null || isZero(sig))) {
        signatures[signer] = await signBytes(feePayerKey.privateKey, decoded.messageBytes);
        continue;
      }
      const who = signer === intent.fromWallet ? 'from_wallet' : `signer ${signer}`;
      if (sig === null || isZero(sig))
        return err(400, 'missing_signature', `the transaction is not signed by ${who}`);
      const key = await getPublicKeyFromAddress(address(signer));
      if (!(await verifySignature(key, sig, decoded.messageBytes)))
        return err(400, 'invalid_signature', `the signature of ${who} is not valid`);
    }
    if (!(intent.fromWallet in signatures))
      return err(400, 'missing_signature', 'from_wallet is not a signer of the transaction');
    // The same transaction again: the same answer (a transaction executes once).
    if (intent.submitted) return intent.submitted.reply;
    const now = Date.now();
    if (now > intent.expiresAt)
      return err(400, 'intent_expired', 'the transaction has expired; build a new one');
    const first = Object.values(signatures)[0];
    const txSignature = encodeBase58(first as Uint8Array);
    const reply: Reply = {
      status: 200,
      body: { intent_id: id, status: 'pending', tx_signature: txSignature },
    };
    intent.submitted = { at: now, reply };
    ledger.push({
      kind: 'solana',
      intent_id: id,
      from: 'SOLANA',
      to: intent.to,
      amount: intent.amount.toString(),
      recipient: intent.recipient,
      owner: intent.fromWallet,
      nonce: null,
      idempotency_key: idemKey,
      tx_hash: null,
      tx_signature: txSignature,
      solana_tx_kind: intent.txKind,
      at: now,
    });
    return reply;
  }

  function status(id: string): Reply {
    const intent = intents.get(id);
    if (!intent) return err(404, 'intent_not_found', 'no such intent');
    return { status: 200, body: { intent_id: id, status: statusOf(intent, Date.now()) } };
  }

  function createPlant(raw: string, body: Record<string, unknown>): Reply {
    const bad = (message: string): Reply => ({ status: 400, body: { error: 400, message } });
    const idText = /"id"\s*:\s*(-?[0-9]+)\s*[,}]/.exec(raw)?.[1];
    if (typeof body['id'] !== 'number' || !Number.isInteger(body['id']) || idText === undefined)
      return bad('id is required and must be an integer');
    const id = BigInt(idText);
    if (id < -(2n ** 63n) || id >= 2n ** 63n) return bad('id must be an int64');
    const name = body['name'];
    if (typeof name !== 'string' || name.length === 0) return bad('name is required and must be a string');
    const tag = body['tag'];
    if (tag !== undefined && typeof tag !== 'string') return bad('tag must be a string');
    if (plants.has(idText)) return bad(`a plant with id ${idText} already exists`);
    const plant = { id: Number(id), name, ...(tag !== undefined ? { tag } : {}) };
    plants.set(idText, plant);
    return { status: 200, body: plant };
  }

  // ---- HTTP ------------------------------------------------------------------------------

  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const closing = new AbortController();

  function send(res: ServerResponse, reply: Reply): void {
    if (res.destroyed || res.headersSent) return;
    const text = JSON.stringify(reply.body);
    res.writeHead(reply.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...reply.headers,
    });
    res.end(text);
  }

  async function readBody(req: IncomingMessage): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) return undefined;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  type Route = {
    op: FaultOp;
    auth: 'key' | 'bearer' | 'none';
    run: (body: Record<string, unknown>, raw: string, key: string | null) => Reply | Promise<Reply>;
  };

  function route(method: string, path: string): Route | undefined {
    if (method === 'POST' && path === '/sdk/v1/estimate')
      return { op: 'estimate', auth: 'key', run: (b) => estimate(b) };
    if (method === 'POST' && path === '/sdk/v1/transfer')
      return { op: 'transfer', auth: 'key', run: (b, _r, k) => transfer(b, k) };
    if (method === 'POST' && path === '/sdk/v1/solana/build-tx')
      return { op: 'build_tx', auth: 'key', run: (b) => buildTx(b) };
    if (method === 'POST' && path === '/sdk/v1/solana/submit')
      return { op: 'submit', auth: 'key', run: (b, _r, k) => submit(b, k) };
    const st = /^\/sdk\/v1\/status\/([^/]+)$/.exec(path);
    if (method === 'GET' && st) {
      const id = decodeURIComponent(st[1] as string);
      return {
        op: 'status',
        auth: 'key',
        run: () => (config.statusRoute ? status(id) : err(404, 'not_found', 'no such route')),
      };
    }
    const rpc = /^\/rpc\/([A-Za-z]+)$/.exec(path);
    if (method === 'POST' && rpc) {
      const chain = (rpc[1] as string).toUpperCase();
      if (!isEvmChain(chain)) return undefined;
      return {
        op: 'rpc',
        auth: 'none',
        run: (_b, raw) => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(raw);
          } catch {
            return {
              status: 200,
              body: { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } },
            };
          }
          return { status: 200, body: handleRpc(rpcState, chain, parsed) };
        },
      };
    }
    if (method === 'POST' && path === '/plants')
      return { op: 'plants', auth: 'bearer', run: (b, raw) => createPlant(raw, b) };
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith('/__admin/')) return admin(req, res, method, url);
    const r = route(method, url.pathname);
    if (!r) {
      await readBody(req);
      return send(res, err(404, 'not_found', `no route ${method} ${url.pathname}`));
    }
    if (r.auth === 'key') {
      if (requestLog.length >= 100_000) requestLog = requestLog.slice(-50_000);
      requestLog.push({ op: r.op, at: Date.now() });
    }
    const raw = await readBody(req);
    if (raw === undefined) return send(res, err(413, 'too_large', 'request body too large'));
    if (config.latencyMs > 0)
      await sleep(config.latencyMs, undefined, { signal: closing.signal }).catch(() => {});

    if (r.auth === 'key' && req.headers['x-api-key'] !== apiKey)
      return send(res, err(401, 'unauthorized', 'missing or invalid X-API-Key'));
    if (r.auth === 'bearer' && req.headers.authorization !== `Bearer ${plantsToken}`)
      return send(res, { status: 401, body: { error: 401, message: 'missing or invalid bearer token' } });

    let body: Record<string, unknown> = {};
    if (r.op !== 'rpc' && method === 'POST') {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        return send(
          res,
          r.op === 'plants'
            ? { status: 400, body: { error: 400, message: 'the body must be a JSON object' } }
            : err(400, 'invalid_json', 'the body must be a JSON object'),
        );
      }
    }

    const picked = pickFault(config, r.op, random);
    if (picked.script !== config.faultScript)
      config = Object.freeze({ ...config, faultScript: picked.script });
    const fault: FaultKind | undefined = picked.fault;
    if (fault === 'fail_before')
      return send(res, err(config.failBeforeStatus, 'service_unavailable', 'injected failure before acting'));
    if (fault === 'rate_limit')
      return send(res, {
        ...err(429, 'rate_limited', 'too many requests'),
        headers: { 'retry-after': String(config.retryAfterSeconds) },
      });
    if (fault === 'reset_before') return void req.socket.destroy();
    if (fault === 'hang') {
      if (config.hangMs === null) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      await sleep(config.hangMs, undefined, { signal: closing.signal }).catch(() => {});
      if (closing.signal.aborted) return;
    }

    const rawKey = req.headers['idempotency-key'];
    const idemKey = typeof rawKey === 'string' && rawKey.length > 0 ? rawKey.slice(0, 256) : null;
    const memoKey = idemKey !== null && method === 'POST' && r.op !== 'rpc' ? `${r.op}:${idemKey}` : null;
    const fingerprint = createHash('sha256').update(raw).digest('hex');
    let reply: Reply;
    const stored = memoKey !== null ? idempotency.get(memoKey) : undefined;
    if (config.idempotencyReplay && stored) {
      reply =
        stored.fingerprint === fingerprint
          ? stored.reply
          : err(422, 'idempotency_key_reused', 'this Idempotency-Key was used with another request');
    } else {
      try {
        reply = await r.run(body, raw, idemKey);
      } catch (e) {
        reply = err(500, 'internal_error', e instanceof Error ? e.message.slice(0, 200) : 'internal error');
      }
      if (memoKey !== null && reply.status >= 200 && reply.status < 300)
        idempotency.set(memoKey, { fingerprint, reply });
    }

    if (fault === 'fail_after')
      return send(res, err(config.failAfterStatus, 'internal_error', 'injected failure after acting'));
    if (fault === 'reset_after') return void req.socket.destroy();
    if (fault === 'broken_body') {
      const text = JSON.stringify(reply.body);
      const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(cut) });
      return void res.end(cut);
    }
    send(res, reply);
  }

  async function admin(req: IncomingMessage, res: ServerResponse, method: string, url: URL): Promise<void> {
    const raw = (await readBody(req)) ?? '';
    if (!LOOPBACK.has(req.socket.remoteAddress ?? ''))
      return send(res, err(403, 'forbidden', 'admin is loopback only'));
    let body: Record<string, unknown> = {};
    if (raw.trim().length > 0) {
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        return send(res, err(400, 'invalid_json', 'the body must be JSON'));
      }
    }
    const path = url.pathname;
    try {
      if (path === '/__admin/config' && method === 'GET')
        return send(res, { status: 200, body: adminApi.config() });
      if (path === '/__admin/config' && method === 'POST')
        return send(res, { status: 200, body: adminApi.configure(body as SandboxConfigPatch) });
      if (path === '/__admin/ledger' && method === 'GET')
        return send(res, { status: 200, body: { entries: ledger } });
      if (path === '/__admin/requests' && method === 'GET')
        return send(res, { status: 200, body: { requests: requestLog } });
      if (path === '/__admin/reset' && method === 'POST') {
        adminApi.reset();
        return send(res, { status: 200, body: { ok: true } });
      }
      if (path === '/__admin/info' && method === 'GET') return send(res, { status: 200, body: info() });
      if (
        (path === '/__admin/bump-nonce' && method === 'POST') ||
        (path === '/__admin/nonce' && method === 'GET')
      ) {
        const chain = String(body['chain'] ?? url.searchParams.get('chain') ?? '').toUpperCase();
        const owner = String(body['owner'] ?? url.searchParams.get('owner') ?? '');
        if (!isEvmChain(chain) || !checkEvmAddress(owner).ok)
          return send(res, err(400, 'invalid_request', 'chain (EVM) and owner (address) are required'));
        if (method === 'POST') {
          const by = body['by'] ?? 1;
          if (typeof by !== 'number' || !Number.isInteger(by) || by < 1)
            return send(res, err(400, 'invalid_request', 'by must be a positive integer'));
          adminApi.bumpNonce(chain, owner, by);
        }
        return send(res, {
          status: 200,
          body: {
            expected: expectedNonce(chain, owner).toString(),
            chain: chainNonce(chain, owner).toString(),
          },
        });
      }
      if (path === '/__admin/outside-permit' && method === 'POST') {
        const chain = String(body['chain'] ?? '').toUpperCase();
        const owner = String(body['owner'] ?? '');
        const count = body['count'] ?? 1;
        if (!isEvmChain(chain) || !checkEvmAddress(owner).ok)
          return send(res, err(400, 'invalid_request', 'chain (EVM) and owner (address) are required'));
        if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000)
          return send(res, err(400, 'invalid_request', 'count must be a whole number from 1 to 1000'));
        const used = adminApi.outsidePermit(chain, owner, count);
        return send(res, {
          status: 200,
          body: {
            used: used.map(String),
            expected: expectedNonce(chain, owner).toString(),
            chain: chainNonce(chain, owner).toString(),
          },
        });
      }
      if (path === '/__admin/intent-status' && method === 'POST') {
        const id = body['intent_id'];
        const st = body['status'];
        if (typeof id !== 'string' || typeof st !== 'string')
          return send(res, err(400, 'invalid_request', 'intent_id and status are required'));
        return send(
          res,
          adminApi.setIntentStatus(id, st)
            ? { status: 200, body: { ok: true } }
            : err(404, 'intent_not_found', 'no such intent'),
        );
      }
    } catch (e) {
      return send(res, err(400, 'invalid_request', e instanceof Error ? e.message : String(e)));
    }
    send(res, err(404, 'not_found', 'no such admin route'));
  }

  const adminApi: SandboxAdmin = {
    config: () => config,
    configure(patch) {
      const seedBefore = config.seed;
      config = applyConfigPatch(config, patch);
      if (patch.seed !== undefined || config.seed !== seedBefore) random = seededRandom(config.seed);
      return config;
    },
    reset() {
      ledger = [];
      requestLog = [];
      intents = new Map();
      nonces = new Map();
      idempotency = new Map();
      plants = new Map();
      config = initialConfig;
      random = seededRandom(config.seed);
    },
    bumpNonce(chain, owner, by = 1) {
      nonceState(chain, owner).external += BigInt(by);
      return expectedNonce(chain, owner);
    },
    outsidePermit(chain, owner, count = 1) {
      const first = expectedNonce(chain, owner);
      const s = nonceState(chain, owner);
      const at = Date.now();
      for (let i = 0; i < count; i++) s.uses.push({ at, amount: 0n });
      return Array.from({ length: count }, (_, i) => first + BigInt(i));
    },
    expectedNonce,
    chainNonce,
    setIntentStatus(intentId, st) {
      const intent = intents.get(intentId);
      if (!intent) return false;
      intent.forced = st;
      return true;
    },
    requests: () => [...requestLog],
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      send(res, err(500, 'internal_error', e instanceof Error ? e.message.slice(0, 200) : 'internal error'));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;

  const info = () => ({
    url,
    api_key: apiKey,
    spender,
    network,
    solana_fee_payer: solanaFeePayer,
    solana_deposit_account: solanaDepositAccount,
    rpc: Object.fromEntries(EVM_CHAINS.map((c) => [c, `${url}/rpc/${c}`])),
  });

  return {
    url,
    port,
    host,
    apiKey,
    spender,
    network,
    solanaFeePayer,
    solanaDepositAccount,
    rpcUrl: (chain) => `${url}/rpc/${chain}`,
    ledger: () => [...ledger],
    admin: adminApi,
    async close() {
      closing.abort();
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isZero(sig: Uint8Array): boolean {
  return sig.every((b) => b === 0);
}

function wireBase64(
  messageBytes: ArrayLike<number>,
  signatures: Record<string, SignatureBytes | null>,
): string {
  return getBase64EncodedWireTransaction({
    messageBytes,
    signatures,
  } as unknown as Parameters<typeof getBase64EncodedWireTransaction>[0]);
}
