import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Secret } from '../../src/config/config.ts';
import { verifySignature, secretMatches, bearerToken } from '../../src/http/auth.ts';
import { batchDigest, derivedBatchId } from '../../src/ingest/batch-identity.ts';
import { readJsonBatch } from '../../src/ingest/json-source.ts';
import { validateCsv, validateJson } from '../../src/ingest/validate-input.ts';
import { signatureHeader } from '../../src/queue/callbacks.ts';

const EVM = '0x2F837A1abba5ECe02A82B61C50B1C2385A6DB93c';
const EVM2 = '0xf9908B8d3030ddCf43416EdA9A04c353220Cee45';
const SOL = 'ELJtSAttfEnsme9nKNVcwZ68TuB4x9wb89ubKecUULWx';

const csv = (text: string, options = {}) => validateCsv(Readable.from([Buffer.from(text)]), options);

describe('CSV validation', () => {
  it('reports every problem of the file in one pass, each with its line and column', async () => {
    const r = await csv(
      [
        'id,from,to,amount,recipient',
        `a1,ETH,BASE,1.5,${EVM}`,
        `a2,DOGE,BASE,-1,${EVM}`,
        `a3,SOLANA,SOLANA,2,${SOL}`,
        `a1,ETH,BASE,3,${SOL}`,
      ].join('\n'),
    );
    expect(r.issues.map((i) => [i.line, i.column])).toEqual([
      [3, 'from'],
      [3, 'amount'],
      [4, 'to'],
      [5, 'id'],
      [5, 'recipient'],
    ]);
    expect(r.transfers.map((t) => t.id)).toEqual(['a1']);
    expect(r.invalidRows).toBe(3);
  });

  it('counts lines from the header through blank lines and quoted multi-line fields', async () => {
    const r = await csv(
      [
        'id,from,to,amount,recipient,memo',
        '',
        `a,ETH,BASE,1,${EVM},"two`,
        `lines"`,
        '',
        '   ',
        `b,ETH,BASE,1.0000001,${EVM},x`,
      ].join('\r\n'),
    );
    // A memo is one line of plain text, so the quoted line break makes row a invalid (at its first
    // line); the lines after it are still counted right.
    expect(r.issues).toEqual([
      { line: 3, column: 'memo', message: expect.stringContaining('U+000D at character 4') },
      { line: 7, column: 'amount', message: expect.stringContaining('more than 6 decimals') },
    ]);
    expect(r.transfers).toEqual([]);
  });

  it('refuses a memo over 140 characters and an amount over MAX_TRANSFER_USDC', async () => {
    const r = await csv(
      `from,to,amount,recipient,memo\nETH,BASE,1,${EVM},${'x'.repeat(141)}\nETH,BASE,100.01,${EVM},ok\n`,
      { maxTransferUsdc: 100_000_000n },
    );
    expect(r.issues).toEqual([
      { line: 2, column: 'memo', message: expect.stringContaining('at most 140') },
      { line: 3, column: 'amount', message: expect.stringContaining('above MAX_TRANSFER_USDC (100.00)') },
    ]);
  });

  it('gives rows without id an id derived from their line, and refuses ids of that form', async () => {
    const r = await csv(`id,from,to,amount,recipient\n,ETH,BASE,1,${EVM}\nline-9,ETH,BASE,2,${EVM}\n`);
    expect(r.transfers.map((t) => [t.id, t.hasPayoutId])).toEqual([['line-2', false]]);
    expect(r.issues[0]).toMatchObject({
      line: 3,
      column: 'id',
      message: expect.stringContaining('reserved'),
    });
  });

  it('rejects the file on a control-total mismatch, naming both figures', async () => {
    const text = `from,to,amount,recipient\nETH,BASE,1.5,${EVM}\nETH,BASE,2,${EVM2}\n`;
    expect((await csv(text, { expect: { rows: 2, total: 3_500_000n } })).fatal).toBe(false);
    const rows = await csv(text, { expect: { rows: 3 } });
    expect(rows.fatal).toBe(true);
    expect(rows.issues[0]?.message).toBe('control total: expected 3 rows, the input has 2');
    const total = await csv(text, { expect: { total: 3_000_000n } });
    expect(total.issues[0]?.message).toContain('expected a total of 3.00, the amounts add up to 3.50');
    // Both wrong: both are reported.
    const both = await csv(text, { expect: { rows: 3, total: 3_000_000n } });
    expect(both.fatal).toBe(true);
    expect(both.issues.map((i) => i.message)).toEqual([
      'control total: expected 3 rows, the input has 2',
      'control total: expected a total of 3.00, the amounts add up to 3.50',
    ]);
  });

  it('marks an id-less row that repeats another row of the file as a likely duplicate', async () => {
    const r = await csv(
      `id,from,to,amount,recipient\n,ETH,BASE,5,${EVM}\n,ETH,BASE,5,${EVM.toLowerCase()}\nx,ETH,BASE,6,${EVM}\n,eth,base,6,${EVM}\n`,
    );
    expect(r.duplicates.map((d) => [d.line, d.message.slice(0, 26)])).toEqual([
      [3, 'likely duplicate of line 2'],
      [5, 'likely duplicate of line 4'],
    ]);
    expect(r.transfers.map((t) => t.line)).toEqual([2, 4]);
    const allowed = await csv(`from,to,amount,recipient\nETH,BASE,5,${EVM}\nETH,BASE,5,${EVM}\n`, {
      allowDuplicates: true,
    });
    expect(allowed.transfers).toHaveLength(2);
  });

  it('rejects a broken quote as a problem of the whole file', async () => {
    const r = await csv(`from,to,amount,recipient,memo\nETH,BASE,1,${EVM},"open\n`);
    expect(r.fatal).toBe(true);
    expect(r.issues[0]?.message).toContain('never closed');
  });
});

describe('bounded problem lists', () => {
  it('keeps the first 1,000 problems of a CSV in file order and counts the rest', async () => {
    const r = await csv(`from,to,amount,recipient\n${'DOGE,BASE,1,x\n'.repeat(1500)}`);
    expect(r.invalidRows).toBe(1500);
    expect(r.issues).toHaveLength(1000);
    expect(r.omittedIssues).toBe(2 * 1500 - 1000);
    expect(r.issues.map((i) => i.line)).toEqual(
      Array.from({ length: 1000 }, (_, k) => 2 + Math.floor(k / 2)),
    );
  });

  it('keeps the first 1,000 in-file duplicates and counts the rest', async () => {
    const r = await csv(`from,to,amount,recipient\n${`ETH,BASE,1,${EVM}\n`.repeat(1600)}`);
    expect(r.transfers).toHaveLength(1);
    expect(r.duplicates).toHaveLength(1000);
    expect(r.omittedDuplicates).toBe(1599 - 1000);
    expect(r.duplicates[0]?.line).toBe(3);
  });

  it('bounds the problems of a JSON document as a whole', async () => {
    const doc: Record<string, unknown> = {
      transfers: [{ from: 'ETH', to: 'BASE', amount: '1', recipient: EVM }],
    };
    for (let i = 0; i < 1200; i++) doc[`extra${i}`] = i;
    const r = await validateJson(readJsonBatch(doc)!);
    expect(r.fatal).toBe(true);
    expect(r.issues).toHaveLength(1000);
    expect(r.omittedIssues).toBe(200);
  });
});

describe('CSV validation on two threads (large files)', () => {
  it('finds exactly what one thread finds, in the same order, on a file of every kind of row', async () => {
    const lowerEvm = EVM.toLowerCase();
    const badChecksum = `${EVM.slice(0, -1)}C`;
    const kinds = [
      (i: number) => `p-${i},ETH,BASE,1.5,${EVM},m${i}`,
      (i: number) => `p-${i},BASE,SOLANA,2,${SOL},`,
      (i: number) => `p-${i},SOLANA,ARB,3,${lowerEvm},x`,
      (i: number) => `p-${i},ETH,BASE,4,${badChecksum},`,
      (i: number) => `p-${i},ETH,SOLANA,5,${EVM},`,
      (i: number) => `p-${i},DOGE,BASE,6,${EVM2},`,
      (i: number) => `dup-${i % 7},ETH,POLYGON,7,${EVM2},`,
      (i: number) => `,ETH,BASE,1.5,${EVM},m${i % 5}`,
      (i: number) => `p-${i},ETH,BASE`,
      () => '',
      (i: number) => `p-${i},ETH,ARB,1.5,${SOL.slice(0, 10)},`,
    ];
    const lines = ['id,from,to,amount,recipient,memo'];
    for (let i = 0; i < 2500; i++) lines.push((kinds[(i * 7) % kinds.length] as (i: number) => string)(i));
    const text = `${lines.join('\n')}\n`;
    const one = await csv(text);
    const two = await csv(text, { parallel: true });
    // More problems than are listed: the first 1,000 are kept, the rest counted.
    expect(one.issues).toHaveLength(1000);
    expect(one.omittedIssues).toBeGreaterThan(0);
    expect(one.transfers.length).toBeGreaterThan(500);
    expect(two).toEqual(one);
  });
});

describe('batch identity', () => {
  const base = `id,from,to,amount,recipient,memo\np1,ETH,BASE,10,${EVM},hi\n,SOLANA,ARB,0.5,${EVM2},\n`;
  const digestOf = async (text: string) => batchDigest((await csv(text)).transfers);

  it('does not change with a BOM, CRLF, column order, chain-code case or blank lines', async () => {
    const d = await digestOf(base);
    expect(await digestOf(`\uFEFF${base}`)).toBe(d);
    expect(await digestOf(base.replaceAll('\n', '\r\n'))).toBe(d);
    expect(
      await digestOf(
        `memo,recipient,amount,to,from,id\nhi,${EVM},10,BASE,ETH,p1\n,${EVM2},0.5,ARB,SOLANA,\n`,
      ),
    ).toBe(d);
    expect(await digestOf(base.replace('ETH,BASE', 'eth,base').replace('SOLANA,ARB', 'Solana,arb'))).toBe(d);
    expect(await digestOf(base.replace('10,', '10.000000,'))).toBe(d);
    expect(derivedBatchId(d)).toMatch(/^b-[0-9a-f]{16}$/);
  });

  it('changes when anything that would be paid changes', async () => {
    const d = await digestOf(base);
    expect(await digestOf(base.replace('10,', '10.01,'))).not.toBe(d);
    expect(await digestOf(base.replace('p1', 'p2'))).not.toBe(d);
    expect(await digestOf(base.replace(',hi', ',hey'))).not.toBe(d);
  });
});

describe('JSON input', () => {
  it('uses the same rules, with the 1-based position of the transfer as its line and the field as its column', async () => {
    const doc = readJsonBatch({
      transfers: [
        { id: 'j1', from: 'eth', to: 'base', amount: '1.25', recipient: EVM },
        { from: 'ETH', to: 'SOLANA', amount: 3, recipient: EVM, extra: 1 },
        'nope',
      ],
      expect: { rows: 3 },
    });
    expect(doc).toBeDefined();
    const r = await validateJson(doc!);
    expect(r.issues.map((i) => [i.line, i.column])).toEqual([
      [2, 'extra'],
      [2, 'amount'],
      [2, 'recipient'],
      [3, null],
      [3, 'from'],
      [3, 'to'],
      [3, 'amount'],
      [3, 'recipient'],
    ]);
    expect(r.issues[1]?.message).toContain('must be a string');
    expect(r.transfers).toEqual([
      {
        id: 'j1',
        hasPayoutId: true,
        line: 1,
        from: 'ETH',
        to: 'BASE',
        amount: 1_250_000n,
        recipient: EVM,
        memo: null,
      },
    ]);
  });

  it('is not a batch document without a transfers array', () => {
    expect(readJsonBatch({ rows: [] })).toBeUndefined();
    expect(readJsonBatch([1])).toBeUndefined();
  });
});

describe('hook credentials', () => {
  const secret = new Secret('whsec_0123456789abcdef');
  const body = Buffer.from('{"transfers":[]}');
  const now = 1_750_000_000_000;
  const plain = { method: 'POST', target: '/v1/batches', body };
  const withQuery = { method: 'POST', target: '/v1/batches?batch_id=b1&allow_duplicates=true', body };
  // The v2 text, computed here from docs/http-api.md rather than with the product's code.
  const v2 = (r: { method: string; target: string; body: Buffer }, t = Math.floor(now / 1000)) =>
    `t=${t},v2=${createHmac('sha256', secret.reveal()).update(`${t}.${r.method}.${r.target}.${r.body.toString()}`).digest('hex')}`;

  it('accepts a signature made over "t.body" within five minutes', () => {
    const header = signatureHeader(secret.reveal(), body.toString(), now - 299_000);
    expect(verifySignature(header, plain, secret, now)).toEqual({ ok: true });
  });

  it('refuses a stale, missing, malformed or wrong signature', () => {
    expect(
      verifySignature(signatureHeader(secret.reveal(), body.toString(), now - 301_000), plain, secret, now),
    ).toMatchObject({
      ok: false,
      reason: expect.stringContaining('5-minute'),
    });
    expect(verifySignature(undefined, plain, secret, now)).toMatchObject({ ok: false });
    expect(verifySignature('v1=abc', plain, secret, now)).toMatchObject({ ok: false });
    const other = signatureHeader('another-secret-xyz', body.toString(), now);
    expect(verifySignature(other, plain, secret, now)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('match'),
    });
    const tampered = signatureHeader(secret.reveal(), body.toString(), now);
    expect(
      verifySignature(tampered, { ...plain, body: Buffer.from('{"transfers":[1]}') }, secret, now),
    ).toMatchObject({ ok: false });
  });

  it('refuses v1 on a request with a query string, even an empty one, and says to sign with v2', () => {
    const header = signatureHeader(secret.reveal(), body.toString(), now);
    for (const target of [withQuery.target, '/v1/batches?']) {
      expect(verifySignature(header, { ...plain, target }, secret, now)).toMatchObject({
        ok: false,
        reason: expect.stringContaining('v2='),
      });
    }
  });

  it('accepts v2 over the method, the target as sent and the body, and nothing else', () => {
    expect(verifySignature(v2(withQuery), withQuery, secret, now)).toEqual({ ok: true });
    expect(verifySignature(v2(plain), plain, secret, now)).toEqual({ ok: true });
    const header = v2(withQuery);
    for (const changed of [
      { ...withQuery, target: '/v1/batches?batch_id=b2&allow_duplicates=true' },
      { ...withQuery, target: '/v1/batches?allow_duplicates=true&batch_id=b1' },
      { ...withQuery, method: 'PUT' },
      { ...withQuery, body: Buffer.from('{"transfers":[1]}') },
      plain,
    ]) {
      expect(verifySignature(header, changed, secret, now), JSON.stringify(changed)).toMatchObject({
        ok: false,
      });
    }
    // One good value among several (a secret being rotated) is enough.
    const rotated = `${v2(withQuery)},v2=${'0'.repeat(64)}`;
    expect(verifySignature(rotated, withQuery, secret, now)).toEqual({ ok: true });
    expect(
      verifySignature(v2(withQuery, Math.floor(now / 1000) - 301), withQuery, secret, now),
    ).toMatchObject({ ok: false, reason: expect.stringContaining('5-minute') });
  });

  it('matches bearer tokens exactly', () => {
    const token = new Secret('hook-token-0123456789');
    expect(bearerToken('Bearer hook-token-0123456789')).toBe('hook-token-0123456789');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(secretMatches('hook-token-0123456789', token)).toBe(true);
    expect(secretMatches('hook-token-012345678', token)).toBe(false);
  });
});
