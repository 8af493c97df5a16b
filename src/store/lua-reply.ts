import { UsdcBatchError } from '../domain/errors.ts';

/*
 * A Lua script's reply, read into the types its header promises (scripts/<name>.lua, "Output"), at
 * the store's edge: a reply of another shape — a script and its caller out of step after an upgrade,
 * a proxy's error — is an error that names the script and what was wrong, never a value cast into
 * a type it does not have. Redis answers a script's table as an array, its numbers as integers, its
 * strings as strings, and nil or false as null (ioredis).
 */

/** A script's reply did not have the shape its header promises. */
export class LuaReplyError extends UsdcBatchError {
  override name = 'LuaReplyError';
}

function wrong(script: string, what: string, got: unknown): never {
  const shown = got === null ? 'null' : Array.isArray(got) ? `an array of ${got.length}` : typeof got;
  throw new LuaReplyError('USDC_LUA_REPLY', `${script}: expected ${what}, got ${shown}`);
}

/** The reply as an array (a Lua table). */
export function replyArray(script: string, reply: unknown): readonly unknown[] {
  return Array.isArray(reply) ? reply : wrong(script, 'an array', reply);
}

/** An integer item (Lua numbers come back as integers). */
export function replyInt(script: string, value: unknown, what = 'an integer'): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  // Numbers a script returns as strings (tostring) are read the same way.
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  return wrong(script, what, value);
}

/** A string item; `orEmpty` reads a missing one (nil, an array's end) as ''. */
export function replyString(script: string, value: unknown, options: { orEmpty?: boolean } = {}): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (options.orEmpty && (value === null || value === undefined)) return '';
  return wrong(script, 'a string', value);
}

/** A decimal integer string item, as a bigint (amounts, micro-USDC). */
export function replyBigint(script: string, value: unknown): bigint {
  const text = replyString(script, value);
  return /^-?\d+$/.test(text) ? BigInt(text) : wrong(script, 'a decimal integer', text);
}

/** An array of strings. */
export function replyStrings(script: string, reply: unknown): string[] {
  return replyArray(script, reply).map((v) => replyString(script, v));
}

/** An array of strings and nulls (nil or false items: a field HMGET found absent). */
export function replyOptionalStrings(script: string, reply: unknown): (string | null)[] {
  return replyArray(script, reply).map((v) => (v === null ? null : replyString(script, v)));
}
