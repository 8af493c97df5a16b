import type { Attributes } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { scrubAttributes, scrubSpan } from '../../src/trace/span-scrubber.ts';

/** What an ended span holds, as the SDK hands it to the processors. */
function endedSpan(over: Partial<ReadableSpan>): ReadableSpan {
  return {
    name: 'POST',
    attributes: {},
    events: [],
    links: [],
    status: { code: 0 },
    ...over,
  } as unknown as ReadableSpan;
}

const SIGNATURE = `0x${'ab'.repeat(65)}`;
const SIGNED_TX = 'A'.repeat(40) + 'Qm9vYmFy'.repeat(40);

describe('the span scrubber (docs/traces.md: nothing secret in a trace)', () => {
  it('cuts URLs to scheme, host and port and drops path, query and header attributes', () => {
    const a: Attributes = {
      'url.full': 'https://user:pass@eth-mainnet.g.example.com:8443/v2/pathKEY?apikey=queryKEY',
      'http.url': 'http://rpc.example.com/KEY/',
      'url.path': '/v2/pathKEY',
      'url.query': 'apikey=queryKEY',
      'http.target': '/v2/pathKEY?apikey=queryKEY',
      'http.request.header.authorization': ['Bearer tok'],
      'http.response.header.set-cookie': ['a=b'],
      'server.address': 'eth-mainnet.g.example.com',
      'server.port': 8443,
      'http.route': '/v1/batches/:id',
    };
    scrubAttributes(a);
    expect(a).toEqual({
      'url.full': 'https://eth-mainnet.g.example.com:8443',
      'http.url': 'http://rpc.example.com',
      'server.address': 'eth-mainnet.g.example.com',
      'server.port': 8443,
      'http.route': '/v1/batches/:id',
    });
  });

  it('drops attributes named for a secret; keeps a public transaction signature', () => {
    const a: Attributes = {
      'usdc_batch.permit': '{"signature":"0x…"}',
      'usdc_batch.signature': SIGNATURE,
      'app.api_key': 'k',
      'x.private_key': 'k',
      'x.token': 't',
      'usdc_batch.tx_signature': '5'.repeat(88),
      'usdc_batch.intent_id': 'int_1',
    };
    scrubAttributes(a);
    expect(a).toEqual({ 'usdc_batch.tx_signature': '5'.repeat(88), 'usdc_batch.intent_id': 'int_1' });
  });

  it('scrubs every text: attributes, arrays, events, status, links and the name', () => {
    const span = endedSpan({
      name: 'GET https://rpc.example.com/KEY1',
      attributes: {
        'usdc_batch.message': `sent to http://h:1/KEY2 with sk_live_KEY3 and Bearer KEY4, signature ${SIGNATURE}`,
        list: ['https://u:KEY5@h.example.com', 'plain'],
      },
      events: [
        {
          name: 'exception',
          time: [0, 0],
          attributes: {
            'exception.message': 'fetch https://h.example.com/v2/KEY6?x=KEY7 failed',
            'tx.body': SIGNED_TX,
          },
        },
      ],
      links: [{ context: {} as never, attributes: { 'link.url': 'https://h.example.com/KEY8' } }],
      status: { code: 2, message: 'HTTP 500 from https://h.example.com/KEY9' },
    });
    scrubSpan(span);
    const all = JSON.stringify(span);
    for (const key of [
      'KEY1',
      'KEY2',
      'KEY3',
      'KEY4',
      'KEY5',
      'KEY6',
      'KEY7',
      'KEY8',
      'KEY9',
      'ab'.repeat(65),
    ]) {
      expect(all, key).not.toContain(key);
    }
    expect(all).not.toContain(SIGNED_TX.slice(40, 100));
    expect(span.name).toBe('GET https://rpc.example.com');
    expect(span.status.message).toBe('HTTP 500 from https://h.example.com');
    expect(span.attributes['list']).toEqual(['https://h.example.com', 'plain']);
    expect(span.events[0]?.attributes?.['exception.message']).toBe('fetch https://h.example.com failed');
  });
});
