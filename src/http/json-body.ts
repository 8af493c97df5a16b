import { HttpError } from './http-errors.ts';

/**
 * The longest JSON string (value or key) a request body may hold. The longest field of the API is a
 * `callback_url` (2,048 characters); everything else is far shorter (an address 44, a memo 140, a
 * label 100). A longer string is refused as a whole before any field of the body is looked at, so no
 * check downstream ever meets one.
 */
export const MAX_JSON_STRING_LENGTH = 4096;

/**
 * Parses a JSON request body (the text as received, BOM removed by the caller), refusing any string
 * longer than MAX_JSON_STRING_LENGTH and the keys that could reach an object's prototype (as
 * Fastify's own parser does). JSON.parse is linear; the reviver only measures what it built.
 */
export function parseJsonBody(text: string): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(text, checkValue);
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'USDC_HTTP_MALFORMED_JSON', 'the body is not valid JSON');
  }
  return doc;
}

function checkValue(key: string, value: unknown): unknown {
  if (key.length > MAX_JSON_STRING_LENGTH) throw stringTooLong('a key', key.length);
  if (typeof value === 'string' && value.length > MAX_JSON_STRING_LENGTH) {
    throw stringTooLong(key === '' ? 'the body' : `"${key.slice(0, 40)}"`, value.length);
  }
  if (key === '__proto__') {
    throw new HttpError(400, 'USDC_HTTP_BAD_BODY', 'the body may not have a "__proto__" key');
  }
  if (key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value) {
    throw new HttpError(400, 'USDC_HTTP_BAD_BODY', 'the body may not have a "constructor.prototype" key');
  }
  return value;
}

function stringTooLong(what: string, length: number): HttpError {
  return new HttpError(
    400,
    'USDC_HTTP_STRING_TOO_LONG',
    `${what} is a string of ${length} characters; no JSON string of a request may exceed ${MAX_JSON_STRING_LENGTH}`,
  );
}
