/*
 * A hash as a pipeline or MULTI answers HGETALL (ioredis types such replies `unknown`), read at the
 * store's edge: an object of strings, or an error that says what came instead — never a value cast
 * into a type it does not have.
 */

/** A reply of another shape where a hash was asked for (HGETALL in a pipeline or MULTI). */
export class HashReplyError extends Error {
  constructor(what: string, expected: string, got: unknown) {
    const shown = got === null ? 'null' : Array.isArray(got) ? 'an array' : typeof got;
    super(`${what}: expected ${expected}, got ${shown}`);
    this.name = 'HashReplyError';
  }
}

/** The HGETALL reply `reply` (of `what`, named in an error) as field/value pairs. */
export function hashReply(what: string, reply: unknown): Record<string, string> {
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply))
    throw new HashReplyError(what, 'a hash', reply);
  const out: Record<string, string> = {};
  for (const [f, v] of Object.entries(reply)) {
    if (typeof v !== 'string') throw new HashReplyError(`${what} field ${f}`, 'a string', v);
    out[f] = v;
  }
  return out;
}
