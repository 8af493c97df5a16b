import {
  ATTESTATION_SIGNATURE_BYTES,
  CctpMessageError,
  decodeBurnMessageV2,
  decodeMessageV2,
  type BurnMessageV2,
  type Hex,
  type MessageV2,
} from './cctp.ts';

/**
 * Circle's CCTP v2 attestation API answers, parsed at the edge (docs/sandbox.md "CCTP v2" has the
 * routes): everything from it is `unknown` until these say what it is. A parser returns a problem
 * string instead of throwing, so an unexpected body is a reason to ask again, never a crash. And
 * the check that an attested message is the burn the worker made, before its owner signs a mint.
 */

export type CctpParsed<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

/** One finality's fee quote: basis points of the amount (may be fractional). */
export type CctpFeeQuote = { readonly finalityThreshold: number; readonly minimumFeeBps: number };

/** One message of `GET /v2/messages/{sourceDomain}`. */
export type CctpApiMessage =
  | {
      readonly status: 'complete';
      /** The attested message (nonce, finality executed, fee executed and expiration filled in). */
      readonly message: Hex;
      readonly attestation: Hex;
      readonly nonce: Hex;
      readonly decoded: MessageV2;
      readonly burn: BurnMessageV2;
    }
  | { readonly status: 'pending'; readonly delayReason: string | null };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const ok = <T>(value: T): CctpParsed<T> => ({ ok: true, value });
const bad = <T>(problem: string): CctpParsed<T> => ({ ok: false, problem });
const HEX_BYTES = /^0x([0-9a-fA-F]{2})*$/;

/** An optional `{ "data": … }` envelope (Circle's reference pages show both forms). */
function unwrap(body: unknown): unknown {
  return isObj(body) && 'data' in body && Object.keys(body).length === 1 ? body['data'] : body;
}

/** `GET /v2/burn/USDC/fees/{src}/{dst}`: `[{ finalityThreshold, minimumFee }]` (one object accepted too). */
export function parseCctpFees(body: unknown): CctpParsed<readonly CctpFeeQuote[]> {
  const root = unwrap(body);
  const rows = Array.isArray(root) ? root : isObj(root) ? [root] : undefined;
  if (!rows || rows.length === 0) return bad('fees: the body is not a list of fee quotes');
  const quotes: CctpFeeQuote[] = [];
  for (const r of rows) {
    const t = isObj(r) ? r['finalityThreshold'] : undefined;
    const fee = isObj(r) ? r['minimumFee'] : undefined;
    if (typeof t !== 'number' || !Number.isInteger(t) || t < 0)
      return bad('fees: a quote has no whole finalityThreshold');
    if (typeof fee !== 'number' || !Number.isFinite(fee) || fee < 0 || fee > 10_000)
      return bad(`fees: the quote for threshold ${t} has no minimumFee in basis points`);
    quotes.push({ finalityThreshold: t, minimumFeeBps: fee });
  }
  return ok(quotes);
}

/** The quote for a finality threshold; undefined when Circle quotes none (that speed is not offered on the route). */
export function feeBpsFor(quotes: readonly CctpFeeQuote[], threshold: number): number | undefined {
  return quotes.find((q) => q.finalityThreshold === threshold)?.minimumFeeBps;
}

/** `GET /v2/messages/{sourceDomain}?transactionHash=…`: each message complete (checked) or pending. */
export function parseCctpMessages(body: unknown): CctpParsed<readonly CctpApiMessage[]> {
  const root = unwrap(body);
  const list = isObj(root) ? root['messages'] : undefined;
  if (!Array.isArray(list)) return bad('messages: the body has no "messages" list');
  const out: CctpApiMessage[] = [];
  for (const [i, m] of list.entries()) {
    const parsed = parseOneMessage(m);
    if (!parsed.ok) return bad(`messages[${i}]: ${parsed.problem}`);
    out.push(parsed.value);
  }
  return ok(out);
}

function parseOneMessage(m: unknown): CctpParsed<CctpApiMessage> {
  if (!isObj(m)) return bad('not an object');
  const status = m['status'];
  const delay = typeof m['delayReason'] === 'string' ? m['delayReason'] : null;
  if (status === 'pending_confirmations') return ok({ status: 'pending', delayReason: delay });
  if (status !== 'complete') return bad(`unknown status ${JSON.stringify(status)?.slice(0, 40)}`);
  const message = m['message'];
  const attestation = m['attestation'];
  // Circle has been seen to say "complete" with "PENDING" in the attestation for a moment: not yet.
  if (attestation === 'PENDING') return ok({ status: 'pending', delayReason: delay });
  if (typeof message !== 'string' || !HEX_BYTES.test(message)) return bad('message is not hex bytes');
  if (typeof attestation !== 'string' || !HEX_BYTES.test(attestation))
    return bad('attestation is not hex bytes');
  const sigBytes = (attestation.length - 2) / 2;
  if (sigBytes === 0 || sigBytes % ATTESTATION_SIGNATURE_BYTES !== 0)
    return bad(`attestation is ${sigBytes} bytes, not whole ${ATTESTATION_SIGNATURE_BYTES}-byte signatures`);
  let decoded: MessageV2;
  let burn: BurnMessageV2;
  try {
    decoded = decodeMessageV2(message);
    burn = decodeBurnMessageV2(decoded.messageBody);
  } catch (e) {
    return bad(e instanceof CctpMessageError ? e.message : 'message does not decode');
  }
  const eventNonce = m['eventNonce'];
  if (typeof eventNonce === 'string' && eventNonce.toLowerCase() !== decoded.nonce.toLowerCase())
    return bad(`eventNonce ${eventNonce.slice(0, 70)} is not the message's nonce ${decoded.nonce}`);
  return ok({
    status: 'complete',
    message: message as Hex,
    attestation: attestation as Hex,
    nonce: decoded.nonce,
    decoded,
    burn,
  });
}

/** `POST /v2/reattest/{nonce}`: `{ message, nonce }`; the nonce must be the one asked about. */
export function parseCctpReattest(body: unknown, nonce: string): CctpParsed<{ readonly nonce: Hex }> {
  const root = unwrap(body);
  const n = isObj(root) ? root['nonce'] : undefined;
  if (typeof n !== 'string' || n.toLowerCase() !== nonce.toLowerCase())
    return bad(`reattest: the answer does not name nonce ${nonce.slice(0, 70)}`);
  return ok({ nonce: n as Hex });
}

/** What the worker burned: the fields of its own `depositForBurn` and the chain it ran on. */
export type BurnAsMade = {
  readonly sourceDomain: number;
  readonly destinationDomain: number;
  /** TokenMessengerV2 on the source chain (the message's sender) and on the destination (its recipient). */
  readonly tokenMessenger: Hex;
  readonly destinationTokenMessenger: Hex;
  /** USDC on the source chain (an address). */
  readonly burnToken: Hex;
  /** bytes32, as the burn named it. */
  readonly mintRecipient: Hex;
  readonly amount: bigint;
  /** The owner that burned (`messageSender`). */
  readonly owner: Hex;
  /** bytes32, as the burn named it (zero: anyone). */
  readonly destinationCaller: Hex;
  readonly maxFee: bigint;
  readonly minFinalityThreshold: number;
};

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const word = (address: string) => `0x${'0'.repeat(24)}${address.slice(2).toLowerCase()}`;

/**
 * Every way an attested message differs from the burn the worker made (empty when it is that
 * burn): a message for another burn, another recipient or amount, or a fee above the burn's
 * `maxFee`, is never minted as this transfer's.
 */
export function attestedBurnMismatches(
  m: { readonly decoded: MessageV2; readonly burn: BurnMessageV2 },
  made: BurnAsMade,
): string[] {
  const d = m.decoded;
  const b = m.burn;
  const checks: [string, boolean][] = [
    ['sourceDomain', d.sourceDomain === made.sourceDomain],
    ['destinationDomain', d.destinationDomain === made.destinationDomain],
    ['sender', same(d.sender, word(made.tokenMessenger))],
    ['recipient', same(d.recipient, word(made.destinationTokenMessenger))],
    ['destinationCaller', same(d.destinationCaller, made.destinationCaller)],
    ['minFinalityThreshold', d.minFinalityThreshold === made.minFinalityThreshold],
    ['burnToken', same(b.burnToken, word(made.burnToken))],
    ['mintRecipient', same(b.mintRecipient, made.mintRecipient)],
    ['amount', b.amount === made.amount],
    ['messageSender', same(b.messageSender, word(made.owner))],
    ['maxFee', b.maxFee === made.maxFee],
    ['feeExecuted', b.feeExecuted <= made.maxFee],
  ];
  return checks.filter(([, fine]) => !fine).map(([field]) => field);
}
