import { hideUrlSecrets } from './url-display.ts';

/** What a secret is replaced with, in logs and in traces. */
export const REDACTED = '[redacted]';

// Key names compared lower-case with `-`/`_` removed. `tx_signature` and `tx_hash` are public
// on-chain ids and stay visible; a permit's `signature` (and its `r`, `s`) authorises a payment.
const SECRET_NAMES = new Set([
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
  'xapikey',
  'xsignature',
  'signature',
  'permit',
  'r',
  's',
  'signed',
  'signedtx',
  'solanasigned',
  'seed',
  'mnemonic',
]);
const SECRET_SUFFIXES = [
  'privatekey',
  'secretkey',
  'secret',
  'apikey',
  'token',
  'password',
  'signedtransaction',
  'keypair',
];

/** Whether a field of that name holds a secret (any letter case, `-`/`_` ignored): logs and traces drop it. */
export function isSecretKey(name: string): boolean {
  const n = name.toLowerCase().replace(/[-_]/g, '');
  return SECRET_NAMES.has(n) || SECRET_SUFFIXES.some((suffix) => n.endsWith(suffix));
}

/**
 * Secrets that can hide inside free text (an error message quoting a request): the service's
 * `sk_` keys, bearer credentials, 65-byte hex signatures, and whatever a URL carries beyond its
 * scheme, host and port (an RPC provider's key in its path, query or user part). A 32-byte hex
 * string is left alone: it is as likely a transaction hash as a key, and keys never reach a
 * message in the first place. Used for log lines and for every text a trace exports.
 */
export function scrubText(text: string): string {
  return hideUrlSecrets(text)
    .replace(/\bsk_[A-Za-z0-9_-]{4,}/g, `sk_${REDACTED}`)
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`)
    .replace(/\b0x[0-9a-fA-F]{130}\b/g, REDACTED);
}
