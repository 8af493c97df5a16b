import { Writable } from 'node:stream';
import { describe, expect, it, beforeAll } from 'vitest';
import {
  getAddressEncoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  verifySignature,
  type SignatureBytes,
} from '@solana/kit';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { SOLANA_USDC_MINT } from '../../src/domain/chains.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createSolanaSigner } from '../../src/signing/solana/solana-signer.ts';
import type { SolanaExpectation } from '../../src/signing/types.ts';
import {
  ataOf,
  buildTx,
  computeBudget,
  fixedSolanaKey,
  memo,
  transferChecked,
} from '../helpers/solana-tx.ts';

const MINT = SOLANA_USDC_MINT.testnet;
const EXPECTED: SolanaExpectation = {
  amount: 5_000_000n,
  recipient: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  to: 'ETH',
};

let treasury: Awaited<ReturnType<typeof fixedSolanaKey>>;
let service: Awaited<ReturnType<typeof fixedSolanaKey>>;
let tx: string;

beforeAll(async () => {
  treasury = await fixedSolanaKey('treasury');
  service = await fixedSolanaKey('service fee payer');
  tx = await buildTx({
    feePayer: service.address,
    instructions: [
      ...computeBudget(),
      transferChecked({
        source: await ataOf(treasury.address, MINT),
        mint: MINT,
        destination: await ataOf(service.address, MINT),
        authority: treasury.address,
        amount: EXPECTED.amount,
      }),
      memo('row 7'),
    ],
    preSigners: [service.keyPair],
  });
});

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger('debug', stream), text: () => lines.join('') };
}

describe('Solana signer', () => {
  it('loads the keypair from a solana-keygen file layout and shows only the address', async () => {
    const log = capture();
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
      logger: log.logger,
    });
    expect(signer.address).toBe(treasury.address);
    expect(signer.usdcAccount).toBe(await ataOf(treasury.address, MINT));
    expect(JSON.stringify(signer)).not.toContain(encodeBase58(treasury.secret));
  });

  it('partially signs as our key only and keeps the fee payer signature already present', async () => {
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
    });
    expect(signer.check(tx, EXPECTED)).toEqual({ ok: true });
    const signed = getTransactionDecoder().decode(Buffer.from(await signer.sign(tx), 'base64'));
    const before = getTransactionDecoder().decode(Buffer.from(tx, 'base64'));

    expect(Buffer.from(signed.messageBytes)).toEqual(Buffer.from(before.messageBytes));
    const ours = signed.signatures[treasury.address] as SignatureBytes;
    const theirs = signed.signatures[service.address] as SignatureBytes;
    expect(await verifySignature(treasury.keyPair.publicKey, ours, signed.messageBytes)).toBe(true);
    expect(Buffer.from(theirs)).toEqual(Buffer.from(before.signatures[service.address] as SignatureBytes));
    expect(await verifySignature(service.keyPair.publicKey, theirs, signed.messageBytes)).toBe(true);
    // Still exactly the accounts and signers of the checked message.
    const message = getCompiledTransactionMessageDecoder().decode(signed.messageBytes);
    expect(message.staticAccounts[0]).toBe(service.address);
  });

  it('refuses to sign a transaction the policy has not passed', async () => {
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
    });
    await expect(signer.sign(tx)).rejects.toMatchObject({ code: 'USDC_SOLANA_TX_INVALID' });
    const inflated = { ...EXPECTED, amount: EXPECTED.amount - 1n };
    expect(signer.check(tx, inflated).ok).toBe(false);
    await expect(signer.sign(tx)).rejects.toMatchObject({ code: 'USDC_SOLANA_TX_INVALID' });
  });

  it('logs a refusal at warn with the batch and transfer it was built for', async () => {
    const log = capture();
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
      logger: log.logger,
    });
    const inflated = { ...EXPECTED, amount: EXPECTED.amount - 1n };
    expect(signer.check(tx, inflated, { batchId: 'payroll-7', transferId: 'inv-3' }).ok).toBe(false);
    const line = log
      .text()
      .split('\n')
      .filter((l) => l.includes('refused to sign a Solana transaction'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(line).toEqual([
      expect.objectContaining({ level: 40, batchId: 'payroll-7', transferId: 'inv-3', to: 'ETH' }),
    ]);
  });

  it('refuses a copy of the checked transaction with one byte of its message changed', async () => {
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
    });
    expect(signer.check(tx, EXPECTED)).toEqual({ ok: true });
    // The memo's last character, near the end of the message: the wire text keeps a long common prefix.
    const bytes = Buffer.from(tx, 'base64');
    const at = bytes.lastIndexOf('row 7') + 4;
    expect(at).toBeGreaterThan(bytes.length - 8);
    bytes[at] = '8'.charCodeAt(0);
    const tampered = bytes.toString('base64');
    expect(tampered.slice(0, -12)).toBe(tx.slice(0, -12));
    await expect(signer.sign(tampered)).rejects.toMatchObject({ code: 'USDC_SOLANA_TX_INVALID' });
    // The one it did check is still signed.
    const signed = getTransactionDecoder().decode(Buffer.from(await signer.sign(tx), 'base64'));
    const ours = signed.signatures[treasury.address] as SignatureBytes;
    expect(await verifySignature(treasury.keyPair.publicKey, ours, signed.messageBytes)).toBe(true);
  });

  it('signs a checked message the same way whether or not it still holds the decoded copy', async () => {
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
    });
    expect(signer.check(tx, EXPECTED)).toEqual({ ok: true });
    const first = await signer.sign(tx);
    // Decoded again from the text: the same bytes in another spelling, and the same text a second time.
    expect(await signer.sign(`${tx}\n`)).toBe(first);
    expect(await signer.sign(tx)).toBe(first);
  });

  it('still signs a transaction checked a few hundred checks earlier', async () => {
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
    });
    const source = await ataOf(treasury.address, MINT);
    const destination = await ataOf(service.address, MINT);
    const many: string[] = [];
    for (let i = 0; i < 300; i++) {
      many.push(
        await buildTx({
          feePayer: service.address,
          instructions: [
            transferChecked({ source, mint: MINT, destination, authority: treasury.address, amount: 1n }),
            memo(`row ${i}`),
          ],
        }),
      );
    }
    for (const t of many) expect(signer.check(t, EXPECTED)).toEqual({ ok: true });
    const oldest = many[0] as string;
    const signed = getTransactionDecoder().decode(Buffer.from(await signer.sign(oldest), 'base64'));
    expect(Buffer.from(signed.messageBytes)).toEqual(
      Buffer.from(getTransactionDecoder().decode(Buffer.from(oldest, 'base64')).messageBytes),
    );
    const ours = signed.signatures[treasury.address] as SignatureBytes;
    expect(await verifySignature(treasury.keyPair.publicKey, ours, signed.messageBytes)).toBe(true);
  });

  it('logs a refusal with its reason and never the key', async () => {
    const log = capture();
    const signer = await createSolanaSigner({
      config: loadConfig({ SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret) }, { keys: signingKeys }),
      logger: log.logger,
    });
    expect(signer.check(tx, { ...EXPECTED, amount: 1n }).ok).toBe(false);
    expect(log.text()).toContain('more than the requested');
    expect(log.text()).not.toContain(encodeBase58(treasury.secret));
    expect(log.text()).not.toContain(Buffer.from(treasury.secret).toString('hex'));
  });

  it('refuses a keypair whose public half does not match its secret', async () => {
    const wrong = Uint8Array.from(treasury.secret);
    wrong.set(getAddressEncoder().encode(service.address), 32);
    // loadConfig already refuses this; the signer must too when handed such bytes directly.
    await expect(
      createSolanaSigner({
        config: { solanaSecretKey: wrong, network: 'testnet', solanaAllowedDestinations: undefined },
      }),
    ).rejects.toMatchObject({ code: 'USDC_SOLANA_KEY_INVALID' });
  });
});
