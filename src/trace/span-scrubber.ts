import type { AttributeValue, Attributes } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace';
import { displayUrl } from '../domain/url-display.ts';
import { REDACTED, isSecretKey, scrubText } from '../domain/secret-text.ts';

/*
 * Nothing secret leaves in a trace (docs/traces.md): every span passes through here as it ends,
 * before any exporter sees it. The HTTP instrumentations record a request's whole URL, and RPC
 * providers put their API key in its path, its query or its user part: a URL keeps its scheme, host
 * and port only (as everywhere the project shows one), the path and query attributes are dropped,
 * and every text — attributes, events, status, links, names — is scrubbed as log lines are (a URL
 * in it, a service key, a bearer credential, a 65-byte signature). An attribute whose name says it
 * holds a secret (authorization, api key, signature, permit…) is dropped whole. A Solana
 * transaction's signature, public on chain, is `tx_signature`, which is not such a name.
 */

/** Attributes that hold a URL: kept as scheme, host and port. */
const URL_ATTRIBUTES = new Set(['url.full', 'http.url']);
/** A request's path and query (an RPC key's place), and headers: never exported. */
const DROPPED_ATTRIBUTES = new Set(['url.path', 'url.query', 'http.target', 'url.original']);
const DROPPED_PREFIXES = ['http.request.header.', 'http.response.header.'];
/** A long unbroken base64 or hex run is a payload (a signed transaction), never a description. */
const PAYLOAD = /[A-Za-z0-9+/_-]{200,}={0,2}/g;

/** A text as it may leave the process in a trace. */
export function scrubbedText(text: string): string {
  return scrubText(text).replace(PAYLOAD, REDACTED);
}

function scrubbedValue(value: AttributeValue): AttributeValue {
  if (typeof value === 'string') return scrubbedText(value);
  if (Array.isArray(value))
    return value.map((v) => (typeof v === 'string' ? scrubbedText(v) : v)) as AttributeValue;
  return value;
}

const lastSegment = (key: string) => key.slice(key.lastIndexOf('.') + 1);

/** Scrubs a span's (or an event's, a link's) attributes in place. */
export function scrubAttributes(attributes: Attributes | undefined): void {
  if (!attributes) return;
  for (const key of Object.keys(attributes)) {
    const value = attributes[key];
    if (
      value === undefined ||
      DROPPED_ATTRIBUTES.has(key) ||
      DROPPED_PREFIXES.some((p) => key.startsWith(p)) ||
      isSecretKey(lastSegment(key))
    ) {
      delete attributes[key];
    } else if (URL_ATTRIBUTES.has(key) && typeof value === 'string') {
      attributes[key] = displayUrl(value);
    } else {
      attributes[key] = scrubbedValue(value);
    }
  }
}

/** Scrubs an ended span in place (the processors after this one, the exporter's, see it so). */
export function scrubSpan(span: ReadableSpan): void {
  scrubAttributes(span.attributes);
  for (const event of span.events) {
    // The SDK's event objects are plain and the span is ended: nothing else writes them now.
    (event as { name: string }).name = scrubbedText(event.name);
    scrubAttributes(event.attributes);
  }
  for (const link of span.links) scrubAttributes(link.attributes);
  if (span.status.message !== undefined) span.status.message = scrubbedText(span.status.message);
  (span as { name: string }).name = scrubbedText(span.name);
}

/** The span processor that scrubs: first in the provider's list, before the exporter's. */
export function createSpanScrubber(): SpanProcessor {
  return {
    onStart: () => {},
    onEnd: (span) => scrubSpan(span),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}
