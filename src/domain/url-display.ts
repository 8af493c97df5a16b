/**
 * What the project shows of a URL — in command output, logs, pages, API answers and BullMQ job
 * logs (docs/production.md "Security"): its scheme, host and port. RPC providers put API keys in the path
 * (`https://x.quiknode.pro/<key>/`, `…/v2/<key>`), the query (`?apikey=`) or the user part
 * (`user:pass@`); Redis URLs carry a password in the user part. None of it is ever shown. A URL is
 * kept whole only where it must be called later (a batch's `callback_url`, in Redis).
 */

const UNPARSEABLE = '[unparseable url]';

/** `https://rpc.example.com:8545` of any URL; `[unparseable url]` for text that is not one. */
export function displayUrl(url: string | URL): string {
  let u: URL;
  try {
    u = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return UNPARSEABLE;
  }
  return u.host === '' ? UNPARSEABLE : `${u.protocol}//${u.host}`;
}

// `scheme://` and everything up to a space, a quote, an angle bracket or a backslash.
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`\\]+/gi;
// Sentence punctuation right after a URL belongs to the sentence.
const TRAILING = /[.,;:!?)\]}]+$/;

/** `text` with every URL in it written as displayUrl writes it (free text: errors, log lines). */
export function hideUrlSecrets(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (match) => {
    // A file URL (a stack trace's frame) names a path on this machine, no credential.
    if (/^file:/i.test(match)) return match;
    const tail = TRAILING.exec(match)?.[0] ?? '';
    return displayUrl(match.slice(0, match.length - tail.length)) + tail;
  });
}
