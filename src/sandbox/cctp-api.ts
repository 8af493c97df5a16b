import type { Hex } from 'viem';
import {
  CCTP_DOMAIN,
  decodeBurnMessageV2,
  decodeMessageV2,
  evmChainOfCctpDomain,
  FINALITY_THRESHOLD,
} from '../domain/cctp.ts';
import { formatUsdc } from '../domain/money.ts';
import {
  attestedMessage,
  decodedMessage,
  fastAllowanceLeft,
  planAttestation,
  sandboxCctpNonce,
  signAttestation,
} from './cctp-attester.ts';
import type { CctpMessageRecord } from './cctp-state.ts';
import type { Reply, ServiceState } from './service-state.ts';

/**
 * The attestation API of Circle's CCTP v2 at `<sandbox>/cctp` (docs/sandbox.md "CCTP v2"), Circle's
 * routes and answers: `GET /v2/messages/{sourceDomain}?transactionHash=…|nonce=…`,
 * `GET /v2/burn/USDC/fees/{src}/{dst}`, `POST /v2/reattest/{nonce}`,
 * `GET /v2/fastBurn/USDC/allowance`. A burn is 404 until `cctpNotFoundMs` after it is first asked
 * about, then `pending_confirmations` for its finality's delay, then `complete`.
 */

const PREFIX = '/cctp/v2/';
const HASH = /^0x[0-9a-fA-F]{64}$/;

const fail = (status: number, error: string, headers?: Record<string, string>): Reply => ({
  status,
  body: { error },
  ...(headers ? { headers } : {}),
});

/** The handler of a `/cctp/v2/…` request, or undefined when no such route. */
export function cctpRoute(
  s: ServiceState,
  method: string,
  path: string,
  query: URLSearchParams,
): (() => Promise<Reply>) | undefined {
  if (!path.startsWith(PREFIX)) return undefined;
  const rest = path.slice(PREFIX.length).split('/').map(decodeURIComponent);
  const handler = pickHandler(s, method, rest, query);
  if (!handler) return undefined;
  return async () => rateLimited(s, Date.now()) ?? (await handler());
}

function pickHandler(
  s: ServiceState,
  method: string,
  rest: string[],
  query: URLSearchParams,
): (() => Promise<Reply>) | undefined {
  const [a, b, c, d, e] = rest;
  if (method === 'GET' && a === 'messages' && rest.length === 2) return () => messages(s, b as string, query);
  if (method === 'GET' && a === 'burn' && b === 'USDC' && c === 'fees' && rest.length === 5)
    return async () => fees(s, d as string, e as string);
  if (method === 'POST' && a === 'reattest' && rest.length === 2) return () => reattest(s, b as string);
  if (method === 'GET' && a === 'fastBurn' && b === 'USDC' && c === 'allowance' && rest.length === 3)
    return async () => allowance(s);
  return undefined;
}

/** Circle's limit: over `cctpRateLimitPerSecond` in a second blocks every request for `cctpRateLimitBlockMs`. */
function rateLimited(s: ServiceState, now: number): Reply | undefined {
  const c = s.cctp;
  const limit = s.config.cctpRateLimitPerSecond;
  const blocked = () =>
    fail(429, 'Too Many Requests', { 'retry-after': String(Math.ceil((c.blockedUntil - now) / 1000)) });
  if (now < c.blockedUntil) return blocked();
  if (limit === null) return undefined;
  c.recent = c.recent.filter((t) => t > now - 1000);
  c.recent.push(now);
  if (c.recent.length <= limit) return undefined;
  c.blockedUntil = now + s.config.cctpRateLimitBlockMs;
  c.recent = [];
  return blocked();
}

function parseDomain(text: string): number | undefined {
  if (!/^\d{1,10}$/.test(text)) return undefined;
  const n = Number(text);
  return Object.values(CCTP_DOMAIN).includes(n) ? n : undefined;
}

async function messages(s: ServiceState, domainText: string, query: URLSearchParams): Promise<Reply> {
  const domain = parseDomain(domainText);
  if (domain === undefined) return fail(400, `unknown source domain ${domainText.slice(0, 20)}`);
  const nonce = query.get('nonce');
  if (nonce !== null) {
    const rec = s.cctp.byNonce.get(nonce.toLowerCase());
    if (!rec?.attested || rec.sourceDomain !== domain) return fail(404, 'Message not found');
    return { status: 200, body: { messages: [completeEntry(rec)] } };
  }
  const txHash = query.get('transactionHash');
  if (txHash === null || !HASH.test(txHash))
    return fail(400, 'transactionHash (0x and 64 hex digits) or nonce is required');
  const chain = evmChainOfCctpDomain(domain);
  const sent = chain ? await s.evm[chain].sentMessages(txHash) : null;
  if (!sent || sent.messages.length === 0) return fail(404, 'Message not found');
  const burnKey = `${domain}:${txHash.toLowerCase()}`;
  const now = Date.now();
  const firstAsked = s.cctp.firstAsked.get(burnKey) ?? now;
  s.cctp.firstAsked.set(burnKey, firstAsked);
  const seenAt = firstAsked + s.config.cctpNotFoundMs;
  if (now < seenAt) return fail(404, 'Message not found');
  const entries = [];
  for (const m of sent.messages) {
    const rec = record(s, domain, txHash.toLowerCase() as Hex, m.logIndex, m.message);
    entries.push(await entry(s, rec, now - seenAt));
  }
  return { status: 200, body: { messages: entries } };
}

function record(
  s: ServiceState,
  domain: number,
  txHash: Hex,
  logIndex: number,
  sent: Hex,
): CctpMessageRecord {
  const key = `${domain}:${txHash}:${logIndex}`;
  const known = s.cctp.messages.get(key);
  if (known) return known;
  const rec: CctpMessageRecord = {
    sourceDomain: domain,
    txHash,
    logIndex,
    sent,
    nonce: sandboxCctpNonce(domain, txHash, logIndex),
    attested: null,
    signing: null,
  };
  s.cctp.messages.set(key, rec);
  s.cctp.byNonce.set(rec.nonce.toLowerCase(), rec);
  return rec;
}

/** The message's answer `sinceSeen` ms after the burn was seen: attested once its finality's delay passed. */
async function entry(
  s: ServiceState,
  rec: CctpMessageRecord,
  sinceSeen: number,
): Promise<Record<string, unknown>> {
  if (rec.attested) return completeEntry(rec);
  const m = decodeMessageV2(rec.sent);
  const b = decodeBurnMessageV2(m.messageBody);
  const plan = planAttestation(m, b, s.config, fastAllowanceLeft(s.config, s.cctp.fastUsed));
  if (!plan.ok) return pendingEntry(plan.delayReason);
  const delay = plan.fast ? s.config.cctpFastDelayMs : s.config.cctpStandardDelayMs;
  if (sinceSeen < delay) return pendingEntry(null);
  if (!rec.signing) {
    const used = plan.fast ? b.amount : 0n;
    s.cctp.fastUsed += used;
    rec.signing = sign(s, rec, { finality: plan.finality, fee: plan.fee, expired: takeExpired(s) }).catch(
      (e: unknown) => {
        // Not signed (the destination's block number could not be read): the next ask tries again.
        s.cctp.fastUsed -= used;
        rec.signing = null;
        throw e;
      },
    );
  }
  await rec.signing;
  return completeEntry(rec);
}

/** Uses one of the `cctpExpiredAttestations` drills, if any is left. */
function takeExpired(s: ServiceState): boolean {
  if (s.config.cctpExpiredAttestations <= 0) return false;
  s.config = Object.freeze({ ...s.config, cctpExpiredAttestations: s.config.cctpExpiredAttestations - 1 });
  return true;
}

/** Signs the record's message with its fee and finality and an expiration block counted on the destination. */
async function sign(
  s: ServiceState,
  rec: CctpMessageRecord,
  p: { finality: number; fee: bigint; expired: boolean },
): Promise<void> {
  const m = decodeMessageV2(rec.sent);
  const destination = evmChainOfCctpDomain(m.destinationDomain);
  const head = destination ? await s.evm[destination].blockNumber() : 0n;
  const expiry = s.config.cctpExpiryBlocks;
  const expirationBlock = p.expired ? head : expiry > 0 ? head + BigInt(expiry) : 0n;
  const message = attestedMessage(rec.sent, {
    nonce: rec.nonce,
    finality: p.finality,
    fee: p.fee,
    expirationBlock,
  });
  rec.attested = { message, attestation: await signAttestation(s.cctp.attester, message), expirationBlock };
}

function pendingEntry(delayReason: string | null): Record<string, unknown> {
  return {
    message: '0x',
    eventNonce: null,
    attestation: 'PENDING',
    decodedMessage: null,
    cctpVersion: 2,
    status: 'pending_confirmations',
    delayReason,
  };
}

function completeEntry(rec: CctpMessageRecord): Record<string, unknown> {
  const a = rec.attested as NonNullable<CctpMessageRecord['attested']>;
  return {
    message: a.message,
    eventNonce: rec.nonce,
    attestation: a.attestation,
    decodedMessage: decodedMessage(a.message),
    cctpVersion: 2,
    status: 'complete',
    delayReason: null,
  };
}

/** Circle's answer: the fee in basis points per finality threshold. */
function fees(s: ServiceState, src: string, dst: string): Reply {
  const from = parseDomain(src);
  const to = parseDomain(dst);
  if (from === undefined || to === undefined || from === to)
    return fail(400, `no route from domain ${src.slice(0, 20)} to ${dst.slice(0, 20)}`);
  return {
    status: 200,
    body: [
      { finalityThreshold: FINALITY_THRESHOLD.fast, minimumFee: s.config.cctpFastFeeBps },
      { finalityThreshold: FINALITY_THRESHOLD.standard, minimumFee: s.config.cctpStandardFeeBps },
    ],
  };
}

/** Signs an attested message again with a fresh expiration block (same nonce, fee and finality). */
async function reattest(s: ServiceState, nonceText: string): Promise<Reply> {
  const rec = s.cctp.byNonce.get(nonceText.toLowerCase());
  if (!rec?.attested) return fail(404, 'Nonce not found');
  const m = decodeMessageV2(rec.attested.message);
  const b = decodeBurnMessageV2(m.messageBody);
  await sign(s, rec, { finality: m.finalityThresholdExecuted, fee: b.feeExecuted, expired: false });
  return {
    status: 200,
    body: { message: 'Re-attestation successfully requested for nonce.', nonce: rec.nonce },
  };
}

function allowance(s: ServiceState): Reply {
  const left = fastAllowanceLeft(s.config, s.cctp.fastUsed);
  return {
    status: 200,
    body: { allowance: Number(formatUsdc(left)), lastUpdated: new Date().toISOString() },
  };
}
