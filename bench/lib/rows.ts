import { randomEvmAddress, randomSolanaAddress, type Row } from '../../support/fixtures.ts';

const EVM = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;

/** A distinct amount per row, 10.00 to 59.99 USDC: well above every sandbox fee, under the fee cap. */
function amountOf(i: number): string {
  return `${10 + (i % 50)}.${String(i % 100).padStart(2, '0')}`;
}

/** SOLANA → an EVM chain (spread over the four), each row with its own id and recipient. */
export function solanaRows(n: number, tag: string): Row[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${tag}-${i}`,
    from: 'SOLANA',
    to: EVM[i % 4] as string,
    amount: amountOf(i),
    recipient: randomEvmAddress(),
    memo: `bench ${i}`,
  }));
}

/** EVM → EVM rows from the given sources in turn (one (chain, owner) each), to another chain. */
export function evmRows(n: number, sources: readonly string[], tag: string, to?: string): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const from = sources[i % sources.length] as string;
    return {
      id: `${tag}-${i}`,
      from,
      to: to ?? (EVM[(EVM.indexOf(from as (typeof EVM)[number]) + 1) % 4] as string),
      amount: amountOf(i),
      recipient: randomEvmAddress(),
      memo: `bench ${i}`,
    };
  });
}

/** The ingest file: every route (EVM → EVM, EVM → SOLANA, SOLANA → EVM), ids, memos. */
export function mixedRows(n: number, tag: string): Row[] {
  return Array.from({ length: n }, (_, i) => {
    const kind = i % 3;
    const from = kind === 2 ? 'SOLANA' : (EVM[i % 4] as string);
    const to = kind === 1 ? 'SOLANA' : (EVM[(i + 1) % 4] as string);
    return {
      id: `${tag}-${i}`,
      from,
      to,
      amount: amountOf(i),
      recipient: to === 'SOLANA' ? randomSolanaAddress() : randomEvmAddress(),
      memo: `bench ${i}`,
    };
  });
}
