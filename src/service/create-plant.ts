import got, { type Response } from 'got';
import { Secret } from '../config/config.ts';
import { DEFAULTS } from '../config/defaults.ts';
import { classifyFailure } from './classify-failure.ts';
import { networkFactsOf } from './service-client.ts';
import { ServiceError, scrub } from './service-error.ts';

/** docs/transfer-service.md §2.6: a NewPlant is a Plant plus its int64 `id`. */
export type NewPlant = { readonly id: bigint | number; readonly name: string; readonly tag?: string };
export type Plant = { readonly name: string; readonly tag?: string; readonly id?: bigint };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * The sample plant-store operation (docs/transfer-service.md §4.5): `POST {sandbox_url}/plants` with
 * `Authorization: Bearer`. 200 → the Plant; 400 → a `rejected` ServiceError whose serviceCode is
 * the Error record's int32 `error` and serviceMessage its `message`.
 */
export async function createPlant(
  deps: {
    readonly baseUrl: string;
    readonly token: Secret | string;
    readonly connectTimeoutMs?: number;
    readonly responseTimeoutMs?: number;
  },
  plant: NewPlant,
): Promise<Plant> {
  const token = typeof deps.token === 'string' ? new Secret(deps.token) : deps.token;
  const id = BigInt(plant.id);
  if (id < INT64_MIN || id > INT64_MAX) throw new RangeError('plant id must be an int64');
  // Written by hand so that an int64 id beyond 2^53 keeps every digit.
  const body = `{"id":${id.toString()},"name":${JSON.stringify(plant.name)}${
    plant.tag !== undefined ? `,"tag":${JSON.stringify(plant.tag)}` : ''
  }}`;
  const connectMs = deps.connectTimeoutMs ?? DEFAULTS.SERVICE_CONNECT_TIMEOUT_MS;
  const responseMs = deps.responseTimeoutMs ?? DEFAULTS.SERVICE_RESPONSE_TIMEOUT_MS;
  const secrets = [token.reveal()];
  let response: Response<string>;
  try {
    response = await got.post(`${deps.baseUrl.replace(/\/+$/, '')}/plants`, {
      body,
      headers: {
        authorization: `Bearer ${token.reveal()}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      responseType: 'text',
      throwHttpErrors: false,
      followRedirect: false,
      retry: { limit: 0 },
      timeout: { lookup: connectMs, connect: connectMs, response: responseMs, socket: responseMs },
    });
  } catch (err) {
    const facts = networkFactsOf(err);
    const code = facts.type === 'network' ? facts.code : undefined;
    throw new ServiceError({
      kind: classifyFailure(facts).kind,
      operation: 'create_plant',
      reason: code ?? 'network error',
      cause: new Error(
        scrub(`${code ?? 'error'}: ${err instanceof Error ? err.message : String(err)}`, secrets),
      ),
    });
  }
  let parsed: unknown;
  let bodyOk = true;
  try {
    parsed = JSON.parse(response.body);
  } catch {
    bodyOk = false;
  }
  const status = response.statusCode;
  if (status === 200) {
    const p = bodyOk ? readPlant(parsed) : undefined;
    if (p) return p;
    throw new ServiceError({
      kind: classifyFailure({ type: 'response', status }).kind,
      operation: 'create_plant',
      httpStatus: status,
      reason: 'the body is not a Plant record',
    });
  }
  const record = bodyOk ? readErrorRecord(parsed) : undefined;
  const retryAfter = response.headers['retry-after'];
  const c = classifyFailure({
    type: 'response',
    status,
    retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
  });
  throw new ServiceError({
    kind: c.kind,
    operation: 'create_plant',
    httpStatus: status,
    serviceCode: record ? String(record.error) : undefined,
    serviceMessage: record ? scrub(record.message, secrets) : undefined,
    retryAfterMs: c.retryAfterMs,
    ...(status === 400 && !record ? { reason: 'the 400 body is not an Error record' } : {}),
  });
}

function readPlant(v: unknown): Plant | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o['name'] !== 'string') return undefined;
  if (o['tag'] !== undefined && o['tag'] !== null && typeof o['tag'] !== 'string') return undefined;
  const id = o['id'];
  return {
    name: o['name'],
    ...(typeof o['tag'] === 'string' ? { tag: o['tag'] } : {}),
    ...(typeof id === 'number' && Number.isInteger(id) ? { id: BigInt(id) } : {}),
  };
}

function readErrorRecord(v: unknown): { error: number; message: string } | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  const error = o['error'];
  const message = o['message'];
  if (typeof error !== 'number' || !Number.isInteger(error) || error < -(2 ** 31) || error >= 2 ** 31)
    return undefined;
  if (typeof message !== 'string') return undefined;
  return { error, message };
}
