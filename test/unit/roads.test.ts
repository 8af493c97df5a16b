import { describe, expect, it } from 'vitest';
import { formatNative, gasNeeded, OWNER_NEXT_TXS_GAS } from '../../src/domain/owner-gas.ts';
import { onRoad, roadProblem } from '../../src/ingest/road-rows.ts';
import type { ValidatedInput } from '../../src/ingest/validate-input.ts';
import type { TransferRequest } from '../../src/domain/transfer.ts';

const row = (line: number, from: string, to: string) => ({ line, from, to }) as unknown as TransferRequest;

function input(transfers: TransferRequest[]): ValidatedInput {
  return {
    transfers,
    issues: [],
    omittedIssues: 0,
    invalidRows: 0,
    duplicates: [],
    omittedDuplicates: 0,
    fatal: false,
    refusal: null,
    inputRows: transfers.length,
    inputTotal: 0n,
  };
}

describe('the road a row can take', () => {
  it('carries every row on the service, and EVM rows only on CCTP, naming the SOLANA column', () => {
    expect(roadProblem({ from: 'SOLANA', to: 'BASE' }, 'service')).toBeUndefined();
    expect(roadProblem({ from: 'ETH', to: 'BASE' }, 'cctp')).toBeUndefined();
    expect(roadProblem({ from: 'SOLANA', to: 'BASE' }, 'cctp')?.column).toBe('from');
    expect(roadProblem({ from: 'ARB', to: 'SOLANA' }, 'cctp-fast')).toEqual({
      column: 'to',
      message:
        'SOLANA is not on the cctp-fast road (EVM chains only); take this row through the service (via service)',
    });
  });

  it('moves the rows a road cannot carry to the invalid rows, keeping the rest in order', () => {
    const given = input([row(2, 'ETH', 'BASE'), row(3, 'ETH', 'SOLANA'), row(4, 'ARB', 'POLYGON')]);
    expect(onRoad(given, 'service')).toBe(given);
    const out = onRoad(given, 'cctp');
    expect(out.transfers.map((t) => t.line)).toEqual([2, 4]);
    expect(out.invalidRows).toBe(1);
    expect(out.issues.map((i) => [i.line, i.column])).toEqual([[3, 'to']]);
    const clean = input([row(2, 'ETH', 'BASE')]);
    expect(onRoad(clean, 'cctp')).toBe(clean);
  });
});

describe("an owner's gas", () => {
  it('is shown exactly in native units and needs an approval, a burn and a mint at the gas price', () => {
    expect(formatNative(0n)).toBe('0');
    expect(formatNative(10n ** 19n)).toBe('10');
    expect(formatNative(1_230_000_000_000_000n)).toBe('0.00123');
    expect(formatNative(1n)).toBe('0.000000000000000001');
    expect(OWNER_NEXT_TXS_GAS).toBe(400_000n);
    // 30 gwei: 0.012 ETH, as docs/cctp.md says.
    expect(formatNative(gasNeeded(30_000_000_000n))).toBe('0.012');
  });
});
