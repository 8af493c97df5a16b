import { describe, expect, it } from 'vitest';
import { displayUrl, hideUrlSecrets } from '../../src/domain/url-display.ts';

// Where providers put keys: the path (QuickNode, GetBlock, Alchemy), the query (Infura's
// `?apikey=`, many others), the user part (`user:pass@`, `key@`). None may ever be shown.
const SECRETS = ['pathKEY1', 'queryKEY2', 'userKEY3', 'passKEY4'];
const URLS = [
  ['https://example.quiknode.pro/pathKEY1/', 'https://example.quiknode.pro'],
  ['https://go.getblock.io/pathKEY1', 'https://go.getblock.io'],
  ['https://eth-mainnet.g.alchemy.com/v2/pathKEY1', 'https://eth-mainnet.g.alchemy.com'],
  ['https://rpc.example.com:8545/?apikey=queryKEY2', 'https://rpc.example.com:8545'],
  ['https://rpc.example.com/rpc#queryKEY2', 'https://rpc.example.com'],
  ['https://userKEY3:passKEY4@rpc.example.com/', 'https://rpc.example.com'],
  ['https://:passKEY4@rpc.example.com', 'https://rpc.example.com'],
  ['https://userKEY3@rpc.example.com:443/x', 'https://rpc.example.com'],
  ['redis://default:passKEY4@redis.internal:6380/2', 'redis://redis.internal:6380'],
  ['rediss://userKEY3:passKEY4@10.0.0.5:6379', 'rediss://10.0.0.5:6379'],
  ['http://[::1]:8080/pathKEY1?queryKEY2', 'http://[::1]:8080'],
] as const;

describe('displayUrl: scheme, host and port only', () => {
  it.each(URLS)('%s shows as %s', (url, shown) => {
    expect(displayUrl(url)).toBe(shown);
    for (const s of SECRETS) expect(displayUrl(url)).not.toContain(s);
  });

  it('says nothing of a string that is not a URL', () => {
    expect(displayUrl('not a url pathKEY1')).toBe('[unparseable url]');
    expect(displayUrl('mailto:userKEY3@example.com')).toBe('[unparseable url]');
  });
});

describe('hideUrlSecrets: every URL in a text', () => {
  it('keeps the text around each URL, and its punctuation', () => {
    const text =
      'BASE RPC https://example.quiknode.pro/pathKEY1/: HTTP 500; ARB (https://userKEY3:passKEY4@rpc.example.com/?apikey=queryKEY2), and redis://:passKEY4@127.0.0.1:6379/0.';
    expect(hideUrlSecrets(text)).toBe(
      'BASE RPC https://example.quiknode.pro: HTTP 500; ARB (https://rpc.example.com), and redis://127.0.0.1:6379.',
    );
  });

  it('finds URLs quoted in JSON and in upper case, and leaves other text as it is', () => {
    const text = `{"url":"HTTPS://go.getblock.io/pathKEY1","note":"no url: 127.0.0.1:6379/x"}`;
    expect(hideUrlSecrets(text)).toBe(`{"url":"https://go.getblock.io","note":"no url: 127.0.0.1:6379/x"}`);
    expect(hideUrlSecrets('owner 0xabc: 12.00 USDC free')).toBe('owner 0xabc: 12.00 USDC free');
    // A stack frame's file URL is a path on this machine: kept.
    expect(hideUrlSecrets('at run (file:///app/src/x.ts:1:2)')).toBe('at run (file:///app/src/x.ts:1:2)');
  });

  it.each(URLS)('hides the secrets of %s inside a sentence', (url, shown) => {
    const out = hideUrlSecrets(`call ${url} failed`);
    expect(out).toBe(`call ${shown} failed`);
  });
});
