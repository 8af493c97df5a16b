import { describe, expect, it } from 'vitest';
import { Secret } from '../../src/config/config.ts';
import { createLogger } from '../../src/log/logger.ts';

/** A pino destination that keeps every line, parsed. */
function capture() {
  const raw: string[] = [];
  return {
    stream: { write: (line: string) => void raw.push(line) },
    raw,
    lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const API_KEY = 'sk_live_9fQx2Lw7TzR1';
const EVM_KEY = `0x${'5e'.repeat(32)}`;
const SIGNATURE = `0x${'ab'.repeat(65)}`;
const SIGNED_TX = 'AQAAAAAAAAAAsignedTransactionBase64==';

describe('logger', () => {
  it('writes one JSON object per line at the configured level and above', () => {
    const out = capture();
    const log = createLogger('warn', out.stream);
    log.info('dropped');
    log.warn({ batch_id: 'b1' }, 'kept');
    expect(out.lines()).toEqual([expect.objectContaining({ level: 40, batch_id: 'b1', msg: 'kept' })]);
  });

  it('redacts private keys, API keys, Authorization and signatures wherever they sit', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.info(
      {
        privateKey: EVM_KEY,
        config: { evmPrivateKey: EVM_KEY, transferApiKey: API_KEY, solana_secret_key: [1, 2, 3] },
        request: {
          headers: { Authorization: `Bearer ${API_KEY}`, 'X-API-Key': API_KEY, 'x-signature': 't=1,v1=ff' },
        },
        deep: { a: { b: { c: { apiKey: API_KEY } } } },
      },
      'calling the service',
    );
    const [line] = out.lines();
    expect(line).toMatchObject({
      privateKey: '[redacted]',
      config: { evmPrivateKey: '[redacted]', transferApiKey: '[redacted]', solana_secret_key: '[redacted]' },
      request: {
        headers: { Authorization: '[redacted]', 'X-API-Key': '[redacted]', 'x-signature': '[redacted]' },
      },
      deep: { a: { b: { c: { apiKey: '[redacted]' } } } },
    });
    expect(out.raw.join('')).not.toContain(API_KEY);
    expect(out.raw.join('')).not.toContain(EVM_KEY.slice(2));
  });

  it('redacts permit signatures and signed transactions but keeps public transaction ids', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.info(
      {
        permit: {
          owner: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
          signature: SIGNATURE,
          r: '0x01',
          s: '0x02',
        },
        body: { intent_id: 'int_1', signed_transaction: SIGNED_TX },
        saved: { signedTransaction: SIGNED_TX, solana_signed: SIGNED_TX },
        tx_hash: `0x${'12'.repeat(32)}`,
        tx_signature:
          '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
      },
      'submitted',
    );
    const [line] = out.lines();
    expect(line).toMatchObject({
      permit: '[redacted]',
      body: { intent_id: 'int_1', signed_transaction: '[redacted]' },
      saved: { signedTransaction: '[redacted]', solana_signed: '[redacted]' },
      tx_hash: `0x${'12'.repeat(32)}`,
      tx_signature:
        '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
    });
    expect(out.raw.join('')).not.toContain(SIGNED_TX);
    expect(out.raw.join('')).not.toContain(SIGNATURE.slice(2));
  });

  it("scrubs keys, bearer credentials and signatures out of messages and errors' fields", () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    const err = Object.assign(new Error(`request failed: X-API-Key ${API_KEY} refused`), {
      options: { headers: { 'x-api-key': API_KEY, authorization: `Bearer ${API_KEY}` } },
      payload: { signature: SIGNATURE },
    });
    log.error(err);
    log.error({ err }, 'estimate failed with Authorization: Bearer %s', 'tok-123456');
    log.warn(`permit ${SIGNATURE} re-sent`);
    const text = out.raw.join('');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('tok-123456');
    expect(text).not.toContain(SIGNATURE.slice(2));
    const [first, second, third] = out.lines();
    expect(first).toMatchObject({
      msg: 'request failed: X-API-Key sk_[redacted] refused',
      err: {
        type: 'Error',
        options: { headers: { 'x-api-key': '[redacted]', authorization: '[redacted]' } },
      },
    });
    expect(second).toMatchObject({ msg: 'estimate failed with Authorization: Bearer [redacted]' });
    expect(third).toMatchObject({ msg: 'permit [redacted] re-sent' });
  });

  it('shows a URL by its scheme, host and port only: in messages, fields, errors and URL objects', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    const keyed = 'https://user:pw-KEY1@example.quiknode.pro/path-KEY2/?apikey=query-KEY3';
    log.warn(
      { rpc: keyed, at: new URL(keyed), err: new Error(`BASE RPC ${keyed}: HTTP 500`) },
      'read %s',
      keyed,
    );
    log.child({ redis: 'redis://:pw-KEY4@10.0.0.5:6380/0' }).info('started');
    const text = out.raw.join('');
    for (const secret of ['KEY1', 'KEY2', 'KEY3', 'KEY4']) expect(text).not.toContain(secret);
    const [first, second] = out.lines();
    expect(first).toMatchObject({
      msg: 'read https://example.quiknode.pro',
      rpc: 'https://example.quiknode.pro',
      at: 'https://example.quiknode.pro',
      err: { message: 'BASE RPC https://example.quiknode.pro: HTTP 500' },
    });
    expect(second).toMatchObject({ redis: 'redis://10.0.0.5:6380' });
  });

  it('redacts the bindings of child loggers and never prints a Secret', () => {
    const out = capture();
    const log = createLogger('info', out.stream);
    log.child({ apiKey: API_KEY, worker: 'w1' }).info({ key: new Secret(EVM_KEY) }, 'started');
    const [line] = out.lines();
    expect(line).toMatchObject({ apiKey: '[redacted]', worker: 'w1', key: '[secret]' });
    expect(out.raw.join('')).not.toContain(EVM_KEY.slice(2));
  });

  it('does not modify the object it was given', () => {
    const out = capture();
    const payload = { permit: { signature: SIGNATURE }, headers: { authorization: 'Bearer x' } };
    createLogger('info', out.stream).info(payload, 'x');
    expect(payload).toEqual({ permit: { signature: SIGNATURE }, headers: { authorization: 'Bearer x' } });
  });
});
