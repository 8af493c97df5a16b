import { parseServiceAmount } from '../domain/money.ts';
import type { BuildTxResult, FeeEstimate, IntentStatus, SubmitResult, TransferResult } from './types.ts';

/**
 * Tolerant parsers of the service's answers: snake_case or camelCase, `status` or `state`, and an
 * optional `{ data: {...} }` envelope. Required fields and amounts are validated; a parser returns
 * a problem string instead of throwing, so an unexpected body is classified, never a crash.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function root(body: unknown): Obj | undefined {
  if (!isObj(body)) return undefined;
  const data = body['data'];
  return isObj(data) && !('intent_id' in body) && !('intentId' in body) && !('amount' in body) ? data : body;
}

function pick(o: Obj, ...names: string[]): unknown {
  for (const n of names) if (o[n] !== undefined && o[n] !== null) return o[n];
  return undefined;
}

function nonEmptyString(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim().length > 0 ? v.trim() : undefined;
}

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const bad = <T>(problem: string): Parsed<T> => ({ ok: false, problem });

export function parseEstimate(body: unknown): Parsed<FeeEstimate> {
  const o = root(body);
  if (!o) return bad('estimate: the body is not a JSON object');
  const amount = parseServiceAmount(pick(o, 'amount'));
  const fee = pick(o, 'fee', 'fees');
  const netReceive = parseServiceAmount(pick(o, 'net_receive', 'netReceive'));
  if (amount === undefined) return bad('estimate: "amount" is missing or not an amount');
  if (!isObj(fee)) return bad('estimate: "fee" is missing or not an object');
  const total = parseServiceAmount(pick(fee, 'total'));
  const platform = parseServiceAmount(pick(fee, 'platform'));
  const gas = parseServiceAmount(pick(fee, 'gas'));
  if (total === undefined || platform === undefined || gas === undefined)
    return bad('estimate: "fee.total", "fee.platform" or "fee.gas" is missing or not an amount');
  if (netReceive === undefined) return bad('estimate: "net_receive" is missing or not an amount');
  return ok({ amount, fee: { total, platform, gas }, netReceive });
}

function intentIdOf(o: Obj): string | undefined {
  return nonEmptyString(pick(o, 'intent_id', 'intentId', 'id'));
}

function statusOf(o: Obj): string | undefined {
  return nonEmptyString(pick(o, 'status', 'state'));
}

export function parseTransfer(body: unknown): Parsed<TransferResult> {
  const o = root(body);
  if (!o) return bad('transfer: the body is not a JSON object');
  const intentId = intentIdOf(o);
  if (!intentId) return bad('transfer: "intent_id" is missing');
  // The spec: an accepted transfer starts `pending`; a body without status still names the intent.
  return ok({
    intentId,
    status: statusOf(o) ?? 'pending',
    txHash: nonEmptyString(pick(o, 'tx_hash', 'txHash')) ?? null,
  });
}

export function parseBuildTx(body: unknown): Parsed<BuildTxResult> {
  const o = root(body);
  if (!o) return bad('build-tx: the body is not a JSON object');
  const intentId = intentIdOf(o);
  if (!intentId) return bad('build-tx: "intent_id" is missing');
  const transaction = nonEmptyString(pick(o, 'transaction', 'tx'));
  if (!transaction || !/^[A-Za-z0-9+/]+={0,2}$/.test(transaction))
    return bad('build-tx: "transaction" is missing or not base64');
  const expires = nonEmptyString(pick(o, 'expires_at', 'expiresAt'));
  const expiresAt = expires !== undefined && !Number.isNaN(Date.parse(expires)) ? expires : null;
  return ok({ intentId, transaction, expiresAt });
}

export function parseSubmit(body: unknown): Parsed<SubmitResult> {
  const o = root(body);
  if (!o) return bad('submit: the body is not a JSON object');
  const intentId = intentIdOf(o);
  if (!intentId) return bad('submit: "intent_id" is missing');
  return ok({
    intentId,
    status: statusOf(o) ?? 'pending',
    txSignature: nonEmptyString(pick(o, 'tx_signature', 'txSignature', 'signature')) ?? null,
  });
}

export function parseIntentStatus(body: unknown, requestedId: string): Parsed<IntentStatus> {
  const o = root(body);
  if (!o) return bad('status: the body is not a JSON object');
  const status = statusOf(o);
  if (!status) return bad('status: "status" is missing');
  const intentId = intentIdOf(o) ?? requestedId;
  if (intentId !== requestedId) return bad('status: the answer names another intent');
  return ok({ intentId, status: status.toLowerCase() });
}

/** The service's own error code and message, from whichever common shape it uses. */
export function parseServiceError(body: unknown): { code?: string; message?: string } {
  if (!isObj(body)) return {};
  const out: { code?: string; message?: string } = {};
  const err = body['error'];
  const src = isObj(err) ? err : body;
  const code = pick(src, 'code', 'error_code', 'errorCode') ?? (isObj(err) ? undefined : err);
  const message = pick(src, 'message', 'error_description', 'detail') ?? pick(body, 'message');
  if (typeof code === 'string' || typeof code === 'number') out.code = String(code).slice(0, 100);
  if (typeof message === 'string') out.message = message;
  return out;
}
