import got from 'got';
import {
  parseCctpFees,
  parseCctpMessages,
  parseCctpReattest,
  type CctpApiMessage,
  type CctpFeeQuote,
} from '../domain/cctp-answers.ts';

/*
 * Circle's CCTP v2 attestation API (docs/cctp.md "The flow"): the fee route, the messages of a burn
 * by its transaction hash, and re-attestation. Every request first passes the gate: all workers
 * together under Circle's limit, and nobody while a 429 pause is on (the gate is Redis-shared, wired
 * by the worker). An answer that does not parse is `unreadable`: a reason to ask again later.
 */

/** Where the CCTP API is asked at all: the shared pause after a 429 and the shared per-second limit. */
export type CctpApiGate = {
  /** Ms left of a pause every worker keeps after a 429 (0: none). */
  pausedFor(): Promise<number>;
  /** Starts that pause for every worker. */
  pause(ms: number): Promise<void>;
  /** Waits for a slot under the shared limit. */
  take(): Promise<void>;
};

/** How long a 429 stops every worker's asking (Circle: 5 minutes). */
export const CCTP_429_PAUSE_MS = 5 * 60_000;

export type CctpAnswer<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'paused'; readonly ms: number }
  | { readonly kind: 'unreadable'; readonly problem: string };

export type CctpApi = {
  fees(srcDomain: number, dstDomain: number): Promise<CctpAnswer<readonly CctpFeeQuote[]>>;
  messages(srcDomain: number, txHash: string): Promise<CctpAnswer<readonly CctpApiMessage[]>>;
  reattest(nonce: string): Promise<CctpAnswer<{ readonly nonce: string }>>;
};

type Api = { readonly base: string; readonly gate: CctpApiGate; readonly http: typeof got };

/** One request through the gate; the body parsed by `parse`. */
async function ask<T>(
  api: Api,
  method: 'GET' | 'POST',
  path: string,
  parse: (body: unknown) => { ok: true; value: T } | { ok: false; problem: string },
): Promise<CctpAnswer<T>> {
  const left = await api.gate.pausedFor();
  if (left > 0) return { kind: 'paused', ms: left };
  await api.gate.take();
  let res;
  try {
    res = await api.http(`${api.base}${path}`, { method });
  } catch (err) {
    return { kind: 'unreadable', problem: `${method} ${path}: ${(err as Error).message}` };
  }
  if (res.statusCode === 429) {
    await api.gate.pause(CCTP_429_PAUSE_MS);
    return { kind: 'paused', ms: CCTP_429_PAUSE_MS };
  }
  if (res.statusCode === 404) return { kind: 'not-found' };
  if (res.statusCode !== 200)
    return { kind: 'unreadable', problem: `${method} ${path}: HTTP ${res.statusCode}` };
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return { kind: 'unreadable', problem: `${method} ${path}: the body is not JSON` };
  }
  const parsed = parse(body);
  return parsed.ok ? { kind: 'ok', value: parsed.value } : { kind: 'unreadable', problem: parsed.problem };
}

/** The attestation API at `baseUrl` (CCTP_API_URL). */
export function createCctpApi(deps: { readonly baseUrl: string; readonly gate: CctpApiGate }): CctpApi {
  const api: Api = {
    base: deps.baseUrl.replace(/\/+$/, ''),
    gate: deps.gate,
    http: got.extend({
      retry: { limit: 0 },
      throwHttpErrors: false,
      followRedirect: false,
      responseType: 'text',
      timeout: { request: 10_000 },
    }),
  };
  return {
    fees: (src, dst) => ask(api, 'GET', `/v2/burn/USDC/fees/${src}/${dst}`, parseCctpFees),
    messages: (src, txHash) =>
      ask(api, 'GET', `/v2/messages/${src}?transactionHash=${encodeURIComponent(txHash)}`, parseCctpMessages),
    reattest: (nonce) =>
      ask(api, 'POST', `/v2/reattest/${encodeURIComponent(nonce)}`, (b) => parseCctpReattest(b, nonce)),
  };
}
