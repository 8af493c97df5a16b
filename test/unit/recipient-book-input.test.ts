import { describe, expect, it } from 'vitest';
import { parseBookAddress, recipientKey } from '../../src/domain/recipient-key.ts';
import { readRecipientCsv } from '../../src/ingest/recipient-file.ts';

const EVM = '0x2F837A1abba5ECe02A82B61C50B1C2385A6DB93c';
const SOL = 'ELJtSAttfEnsme9nKNVcwZ68TuB4x9wb89ubKecUULWx';

describe('address book identity', () => {
  it('knows an EVM address however it is cased, and a Solana address exactly', () => {
    const lower = parseBookAddress(EVM.toLowerCase());
    const mixed = parseBookAddress(EVM);
    expect(lower).toEqual({
      ok: true,
      value: { family: 'evm', address: EVM, key: `evm:${EVM.toLowerCase()}` },
    });
    expect(mixed).toEqual(lower);
    expect(parseBookAddress(SOL)).toEqual({
      ok: true,
      value: { family: 'solana', address: SOL, key: `solana:${SOL}` },
    });
    expect(recipientKey('solana', SOL.toLowerCase())).not.toBe(recipientKey('solana', SOL));
  });

  it('refuses a bad checksum and what is neither kind of address', () => {
    expect(parseBookAddress(EVM.replace('F', 'f'))).toEqual({
      ok: false,
      reason: 'has an invalid EIP-55 checksum',
    });
    expect(parseBookAddress('bob')).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/neither an EVM/),
    });
  });
});

describe('recipients import file', () => {
  it('reads address and label in any order and case, with a BOM, CRLF and blank lines', () => {
    const r = readRecipientCsv(`\uFEFFLabel,ADDRESS\r\nAlice,${EVM}\r\n\r\n,${SOL}\r\n`);
    expect(r.issues).toEqual([]);
    expect(r.rows.map((x) => [x.line, x.address.family, x.label])).toEqual([
      [2, 'evm', 'Alice'],
      [4, 'solana', ''],
    ]);
  });

  it('reports every problem at its line and column', () => {
    const r = readRecipientCsv(
      `address,label\n${EVM},ok\n0x12,short\n${SOL},${'x'.repeat(101)}\n,empty\n${EVM}\n`,
    );
    expect(r.issues.map((i) => [i.line, i.column])).toEqual([
      [3, 'address'],
      [4, 'label'],
      [5, 'address'],
      [6, null],
    ]);
  });

  it('refuses an unknown column and a file without the address column', () => {
    expect(readRecipientCsv('address,label,iban\n').issues).toEqual([
      { line: 1, column: 'iban', message: 'unknown column "iban" (allowed: address, label)' },
    ]);
    expect(readRecipientCsv('label\nx\n').issues).toEqual([
      { line: 1, column: 'address', message: 'missing required column "address"' },
    ]);
    expect(readRecipientCsv('').issues[0]?.message).toMatch(/empty/);
  });
});
