import { describe, expect, it, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import {
  buildSandboxTransfer,
  LEGIT_SOLANA_KINDS,
  MALICIOUS_SOLANA_KINDS,
} from '../../src/sandbox/solana-transaction.ts';
import { createSolanaSigner } from '../../src/signing/solana/solana-signer.ts';
import type { SolanaExpectation, SolanaSigner } from '../../src/signing/types.ts';
import { fixedSolanaKey } from '../helpers/solana-tx.ts';

// The sandbox builds these for build-tx; the policy must agree with it on every kind (a second,
// independently written builder of the same transactions as test/helpers/solana-tx.ts).
const EXPECTED: SolanaExpectation = {
  amount: 25_000_000n,
  recipient: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  to: 'ARB',
};

let signer: SolanaSigner;
let feePayer: string;

beforeAll(async () => {
  const treasury = await fixedSolanaKey('treasury');
  feePayer = (await fixedSolanaKey('sandbox fee payer')).address;
  signer = await createSolanaSigner({
    config: loadConfig(
      { NETWORK: 'testnet', SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) },
      { keys: signingKeys },
    ),
  });
});

const build = (kind: (typeof MALICIOUS_SOLANA_KINDS)[number] | (typeof LEGIT_SOLANA_KINDS)[number]) =>
  buildSandboxTransfer({
    kind,
    network: 'testnet',
    feePayer,
    wallet: signer.address,
    amount: EXPECTED.amount,
    to: EXPECTED.to,
    recipient: EXPECTED.recipient,
  });

describe('Solana policy against the sandbox builder', () => {
  it.each(LEGIT_SOLANA_KINDS)('accepts the sandbox %s transaction', async (kind) => {
    expect(signer.check((await build(kind)).transaction, EXPECTED)).toEqual({ ok: true });
  });
  it.each(MALICIOUS_SOLANA_KINDS)('refuses the sandbox %s transaction', async (kind) => {
    const verdict = signer.check((await build(kind)).transaction, EXPECTED);
    expect(verdict.ok).toBe(false);
  });
});
