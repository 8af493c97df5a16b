import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import type { Config } from '../../src/config/config.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { createServiceClient, type ClosableServiceClient } from '../../src/service/service-client.ts';
import { ServiceError } from '../../src/service/service-error.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { createEvmSigner, permitDeadline } from '../../src/signing/evm/evm-signer.ts';
import { createSolanaSigner } from '../../src/signing/solana/solana-signer.ts';
import type { SolanaExpectation } from '../../src/signing/types.ts';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';
import { fixedSolanaKey } from '../helpers/solana-tx.ts';

const EVM_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const RECIPIENT = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

let sandbox: SandboxProcess;
let client: ClosableServiceClient;
let config: Config;

beforeAll(async () => {
  sandbox = await startSandboxProcess();
  const treasury = await fixedSolanaKey('integration treasury');
  config = loadConfig(
    {
      NETWORK: sandbox.network,
      TRANSFER_API_URL: sandbox.url,
      TRANSFER_API_KEY: sandbox.api_key,
      EVM_PRIVATE_KEY: EVM_KEY,
      PERMIT_SPENDER: sandbox.spender,
      EVM_RPC_URL_POLYGON: sandbox.rpc.POLYGON,
      SOLANA_PRIVATE_KEY: encodeBase58(treasury.secret),
      SOLANA_ALLOWED_DESTINATIONS: sandbox.solana_deposit_account,
    },
    { keys: signingKeys },
  );
  client = createServiceClient({ baseUrl: sandbox.url, apiKey: config.transferApiKey! });
});
afterAll(async () => {
  client?.close();
  await sandbox?.stop();
});
beforeEach(async () => {
  await sandbox.admin.reset();
});

describe('signing against the sandbox', () => {
  it('the sandbox accepts a permit signed with the domain read over its RPC and the chain nonce', async () => {
    const reader = createChainReader({ config });
    const signer = createEvmSigner({ config, chainReader: reader });
    await sandbox.admin.bumpNonce('POLYGON', signer.address, 2);
    const nonce = await reader.permitNonce('POLYGON', signer.address);
    expect(nonce).toBe(2n);
    const permit = await signer.signPermit({
      chain: 'POLYGON',
      amount: 3_250_000n,
      nonce: nonce!,
      deadline: permitDeadline(config),
    });
    const r = await client.transfer(
      { from: 'POLYGON', to: 'BASE', amount: 3_250_000n, recipient: RECIPIENT, permit },
      { idempotencyKey: 'it/polygon/1' },
    );
    expect(r.status).toBe('pending');
    const [entry] = await sandbox.admin.ledger();
    expect(entry).toMatchObject({ kind: 'evm', owner: signer.address, nonce: '2', amount: '3250000' });
  });

  it.each(['legit', 'cctp_v1', 'cctp_v2'] as const)(
    'checks and signs a %s build-tx transaction, and LiteSVM runs what it can',
    async (kind) => {
      await sandbox.admin.configure({ solanaTxKind: kind });
      const signer = await createSolanaSigner({ config });
      const amount = 7_000_000n;
      const built = await client.buildSolanaTx({
        to: 'ARB',
        amount,
        fromWallet: signer.address,
        recipient: RECIPIENT,
      });
      const expected: SolanaExpectation = { amount, recipient: RECIPIENT, to: 'ARB' };
      expect(signer.check(built.transaction, expected)).toEqual({ ok: true });
      const signed = await signer.sign(built.transaction);
      const before = await sandbox.admin.balance('SOLANA', signer.address);
      const r = await client
        .submitSolanaTx(
          { intentId: built.intentId, signedTransaction: signed },
          { idempotencyKey: `it/solana/${kind}` },
        )
        .catch((e: unknown) => e);
      if (kind === 'legit') {
        expect(r).toMatchObject({ status: 'pending' });
        const [entry] = await sandbox.admin.ledger();
        expect(entry).toMatchObject({
          kind: 'solana',
          owner: signer.address,
          solana_tx_kind: kind,
          amount: '7000000',
        });
        expect(await sandbox.admin.balance('SOLANA', signer.address)).toBe(before - amount);
      } else {
        // LiteSVM has no CCTP program: the runtime refuses the burn, and nothing moves.
        expect(r).toBeInstanceOf(ServiceError);
        expect((r as ServiceError).serviceCode).toBe('program_not_found');
        // The reason names the runtime's error, not the start of its debug dump.
        const said = (r as ServiceError).serviceMessage ?? '';
        expect(said).toMatch(/: (InvalidProgramForExecution|ProgramAccountNotFound)\b/);
        expect(said).not.toContain('FailedTransactionMetadata');
        expect(said).not.toContain('meta:');
        expect(await sandbox.admin.ledger()).toEqual([]);
        expect(await sandbox.admin.balance('SOLANA', signer.address)).toBe(before);
      }
    },
  );

  it.each(['approve_delegate', 'sol_transfer', 'extra_transfer', 'wallet_fee_payer'] as const)(
    'refuses the sandbox’s %s transaction: nothing is signed or submitted',
    async (kind) => {
      await sandbox.admin.configure({ solanaTxKind: kind });
      const signer = await createSolanaSigner({ config });
      const built = await client.buildSolanaTx({
        to: 'ETH',
        amount: 1_000_000n,
        fromWallet: signer.address,
        recipient: RECIPIENT,
      });
      const verdict = signer.check(built.transaction, {
        amount: 1_000_000n,
        recipient: RECIPIENT,
        to: 'ETH',
      });
      expect(verdict.ok).toBe(false);
      await expect(signer.sign(built.transaction)).rejects.toMatchObject({ code: 'USDC_SOLANA_TX_INVALID' });
      expect(await sandbox.admin.ledger()).toEqual([]);
    },
  );
});
