import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fundingAmount, DEFAULT_SANDBOX_CONFIG } from '../../src/sandbox/sandbox-config.ts';
import { startLiteSvmChain } from '../../src/sandbox/solana/litesvm-chain.ts';
import { randomSolanaAddress } from '../helpers/fixtures.ts';

/*
 * The sandbox funds a Solana wallet the first time it meets it. Rows of one batch meet the wallet
 * at once (one build-tx each): every meet must return only once the wallet's USDC account exists,
 * or a transaction built for the second row can reach the runtime first and fail InvalidAccountData.
 */
describe('LiteSVM sandbox chain: meeting a wallet', () => {
  it('makes every concurrent meet wait until the first one funded the wallet', async () => {
    const chain = await startLiteSvmChain({
      network: 'testnet',
      feePayerSeed: Uint8Array.from(randomBytes(32)),
      config: () => DEFAULT_SANDBOX_CONFIG,
    });
    const wallet = randomSolanaAddress();
    const seen = await Promise.all(
      Array.from({ length: 5 }, async () => {
        await chain.meet(wallet);
        return await chain.balanceOf(wallet);
      }),
    );
    expect(seen).toEqual(Array.from({ length: 5 }, () => fundingAmount(DEFAULT_SANDBOX_CONFIG)));
    // Met once: a later meet funds nothing more.
    await chain.meet(wallet);
    expect(await chain.balanceOf(wallet)).toBe(fundingAmount(DEFAULT_SANDBOX_CONFIG));
    await chain.close();
  });
});
