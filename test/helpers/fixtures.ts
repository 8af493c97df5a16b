import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checksumEvmAddress } from '../../src/domain/addresses.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';

export { TEST_EVM_KEY, TEST_EVM_ADDRESS } from './sandbox.ts';

export function randomEvmAddress(): string {
  return checksumEvmAddress(`0x${randomBytes(20).toString('hex')}`);
}
export function randomSolanaAddress(): string {
  let bytes = randomBytes(32);
  while (bytes[0] === 0) bytes = randomBytes(32);
  return encodeBase58(bytes);
}

/** A solana-keygen JSON keypair file (secret seed ‖ public key) in a temp dir. */
export function solanaKeypairFile(dir: string = mkdtempSync(join(tmpdir(), 'usdc-sol-'))): {
  file: string;
  address: string;
} {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const file = join(dir, 'solana-keypair.json');
  writeFileSync(file, JSON.stringify([...seed, ...pub]), { mode: 0o600 });
  return { file, address: encodeBase58(Uint8Array.from(pub)) };
}

export type Row = { id?: string; from: string; to: string; amount: string; recipient: string; memo?: string };

export function csvOf(rows: Row[]): string {
  const lines = ['id,from,to,amount,recipient,memo'];
  for (const r of rows) lines.push([r.id ?? '', r.from, r.to, r.amount, r.recipient, r.memo ?? ''].join(','));
  return `${lines.join('\n')}\n`;
}

/** A mixed batch: EVM→EVM, EVM→SOLANA and SOLANA→EVM rows with unique ids. */
export function mixedRows(n: number, prefix = 'p'): Row[] {
  const evm = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    const kind = i % 3;
    const from = kind === 2 ? 'SOLANA' : evm[i % 4]!;
    const to = kind === 1 ? 'SOLANA' : evm[(i + 1) % 4]!;
    rows.push({
      id: `${prefix}-${i}`,
      from,
      to,
      amount: `${10 + (i % 50)}.${String(i % 100).padStart(2, '0')}`,
      recipient: to === 'SOLANA' ? randomSolanaAddress() : randomEvmAddress(),
      memo: `row ${i}`,
    });
  }
  return rows;
}
