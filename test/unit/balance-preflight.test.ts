import { describe, expect, it } from 'vitest';
import { balancePreflightOf, preflightChain, preflightWarning } from '../../src/ops/balance-preflight.ts';
import type { WalletsReport } from '../../src/ops/wallets.ts';

const usdc = (n: number) => BigInt(Math.round(n * 1_000_000));
const owners = (...balances: (number | null)[]) =>
  balances.map((b, i) => ({
    address: `0x${String(i + 1).repeat(40)}`,
    available: b === null ? null : usdc(b),
  }));
const rows = (...amounts: number[]) => amounts.map(usdc);

describe('the dry run balance pre-flight over several owners', () => {
  it('is ok when one owner covers the batch, or a split over the owners exists', () => {
    expect(preflightChain('BASE', rows(10, 20), owners(100), 'read').verdict).toBe('ok');
    // 60 on the second (exactly), both 50s on the first: best fit finds it where first fit would not.
    const p = preflightChain('BASE', rows(60, 50, 50), owners(100, 60), 'read');
    expect(p).toMatchObject({ verdict: 'ok', needed: usdc(160), available: usdc(160), unplaced: 0 });
    expect(preflightWarning(p)).toBeNull();
  });

  it('is short when the owners together hold less than the batch needs', () => {
    const p = preflightChain('ETH', rows(80, 80), owners(50, 60), 'read');
    expect(p.verdict).toBe('short');
    expect(preflightWarning(p)).toBe(
      'the ETH treasury cannot cover this batch: short by 50.00 USDC (its 2 owners hold 110.00 USDC together)',
    );
    // One owner: today's sentence, unchanged.
    expect(preflightWarning(preflightChain('ETH', rows(80), owners(50), 'read'))).toBe(
      'the ETH treasury cannot cover this batch: short by 30.00 USDC',
    );
  });

  it('asks for rebalancing when a row is bigger than every owner, or the rows do not split', () => {
    const big = preflightChain('ARB', rows(150, 20), owners(100, 100), 'read');
    expect(big).toMatchObject({ verdict: 'rebalance', rowsOverEveryOwner: 1, largestOwner: usdc(100) });
    expect(preflightWarning(big)).toContain(
      '1 row needs more than any single owner holds (the largest row 150.00',
    );
    const split = preflightChain('ARB', rows(70, 70, 70), owners(100, 100, 10), 'read');
    expect(split).toMatchObject({ verdict: 'rebalance', rowsOverEveryOwner: 0, unplaced: 1 });
    expect(preflightWarning(split)).toContain(
      "its rows do not split over the owners' balances as they stand",
    );
  });

  it('says unknown when any owner balance is unknown, and why', () => {
    expect(preflightChain('BASE', rows(1), owners(100, null), 'unreadable')).toMatchObject({
      verdict: 'unknown',
      available: null,
      source: 'unreadable',
    });
    const report = {
      network: 'testnet',
      evm: {
        address: '0x1',
        chains: [],
        owners: [],
        totals: [{ chain: 'BASE', rpc: false, usdc_balance: null, in_flight: null }],
      },
      solana: null,
      redis: 'unavailable',
    } as unknown as WalletsReport;
    const got = balancePreflightOf(
      [
        { from: 'BASE', amount: usdc(1) },
        { from: 'SOLANA', amount: usdc(2) },
      ],
      report,
    );
    expect(got.map((p) => [p.chain, p.verdict, p.source])).toEqual([
      ['BASE', 'unknown', 'no_rpc'],
      ['SOLANA', 'unknown', 'no_key'],
    ]);
  });
});
