import type { Reply, ServiceState } from './service-state.ts';

/** `POST /plants`: the spec's sample plant store (bearer auth, int64 ids, 400 `{error, message}`). */
export function createPlant(s: ServiceState, raw: string, body: Record<string, unknown>): Reply {
  const bad = (message: string): Reply => ({ status: 400, body: { error: 400, message } });
  // The id as written: a JSON number beyond 2^53 loses digits in JSON.parse.
  const idText = /"id"\s*:\s*(-?[0-9]+)\s*[,}]/.exec(raw)?.[1];
  if (typeof body['id'] !== 'number' || !Number.isInteger(body['id']) || idText === undefined)
    return bad('id is required and must be an integer');
  const id = BigInt(idText);
  if (id < -(2n ** 63n) || id >= 2n ** 63n) return bad('id must be an int64');
  const name = body['name'];
  if (typeof name !== 'string' || name.length === 0) return bad('name is required and must be a string');
  const tag = body['tag'];
  if (tag !== undefined && typeof tag !== 'string') return bad('tag must be a string');
  if (s.plants.has(idText)) return bad(`a plant with id ${idText} already exists`);
  const plant = { id: Number(id), name, ...(tag !== undefined ? { tag } : {}) };
  s.plants.set(idText, plant);
  return { status: 200, body: plant };
}
