import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CHAINS, type Chain } from '../../src/domain/chains.ts';
import {
  planRebalance,
  type ChainPosition,
  type FeeEstimator,
  type PlanInput,
} from '../../src/treasury/planner.ts';
import { parsePolicy, type ChainTarget } from '../../src/treasury/policy.ts';

const U = 1_000_000n;
const CENT = 10_000n;

/** A fee like the service's: a flat part per route plus basis points of the amount, rounded up. */
function feeModel(flat: bigint, bps: bigint): FeeEstimator {
  return async (from, to, amount) => {
    const f = flat + (from === 'ETH' || to === 'ETH' ? 2n * U : 0n) + (amount * bps + 9_999n) / 10_000n;
    return { fee: f, netReceive: amount > f ? amount - f : 0n };
  };
}

const at = (chain: Chain, position: bigint): ChainPosition => ({
  chain,
  balance: position,
  incoming: 0n,
  outgoing: 0n,
  position,
});

const recipients = Object.fromEntries(CHAINS.map((c) => [c, `treasury-${c}`])) as Record<Chain, string>;

function input(
  chains: ChainTarget[],
  positions: ChainPosition[],
  extra: Partial<PlanInput> & { minMove?: bigint; maxTotal?: bigint | null } = {},
): PlanInput {
  return {
    policy: { chains, minMove: extra.minMove ?? U, maxTotal: extra.maxTotal ?? null },
    maxFeeBps: extra.maxFeeBps ?? 100n,
    positions,
    recipients,
    estimate: extra.estimate ?? feeModel(100_000n, 5n),
  };
}

describe('rebalance planner: examples', () => {
  it('tops a chain below its min up to its target from the chain with the most to give, net covering the need', async () => {
    const plan = await planRebalance(
      input(
        [
          { chain: 'BASE', min: 5_000n * U, target: 20_000n * U },
          { chain: 'ARB', min: 2_000n * U, target: 8_000n * U },
          { chain: 'SOLANA', min: null, target: 1_000n * U },
        ],
        [at('BASE', 30_000n * U), at('ARB', 1_000n * U), at('SOLANA', 4_000n * U)],
      ),
    );
    expect(plan.moves).toHaveLength(1);
    const [m] = plan.moves;
    expect(m).toMatchObject({ id: 'rb-BASE-ARB', from: 'BASE', to: 'ARB', recipient: 'treasury-ARB' });
    expect(m!.netReceive).toBeGreaterThanOrEqual(7_000n * U);
    expect(m!.netReceive - 7_000n * U).toBeLessThan(CENT);
    expect(m!.amount).toBe(m!.netReceive + m!.fee);
    const arb = plan.chains.find((c) => c.chain === 'ARB')!;
    expect(arb.state).toBe('below_min');
    expect(arb.after).toBe(1_000n * U + m!.netReceive);
    expect(plan.chains.find((c) => c.chain === 'BASE')!.state).toBe('spare');
    expect(plan.short).toEqual([]);
  });

  it('takes several donors for one need, never below their targets, and says what is short', async () => {
    const plan = await planRebalance(
      input(
        [
          { chain: 'BASE', min: null, target: 1_000n * U },
          { chain: 'ARB', min: null, target: 1_000n * U },
          { chain: 'POLYGON', min: 5_000n * U, target: 10_000n * U },
        ],
        [at('BASE', 3_000n * U), at('ARB', 4_000n * U), at('POLYGON', 0n)],
      ),
    );
    expect(plan.moves.map((m) => m.id)).toEqual(['rb-ARB-POLYGON', 'rb-BASE-POLYGON']);
    expect(plan.moves.map((m) => m.amount)).toEqual([3_000n * U, 2_000n * U]);
    const polygon = plan.chains.find((c) => c.chain === 'POLYGON')!;
    expect(plan.short).toEqual([{ chain: 'POLYGON', missing: 10_000n * U - polygon.after }]);
    for (const c of plan.chains.filter((c) => c.chain !== 'POLYGON')) expect(c.after).toBe(c.target);
  });

  it('leaves out a move under min_move, over max_fee_bps or past max_total, with the reason', async () => {
    const chains: ChainTarget[] = [
      { chain: 'BASE', min: null, target: 0n },
      { chain: 'ARB', min: 100n * U, target: 200n * U },
    ];
    const small = await planRebalance(
      input(chains, [at('BASE', 1_000n * U), at('ARB', 50n * U)], { minMove: 500n * U }),
    );
    expect(small.moves).toEqual([]);
    expect(small.skipped[0]?.reason).toMatch(/under min_move/);
    const dear = await planRebalance(
      input(chains, [at('BASE', 1_000n * U), at('ARB', 50n * U)], {
        estimate: feeModel(0n, 200n),
        maxFeeBps: 30n,
      }),
    );
    expect(dear.skipped[0]?.reason).toMatch(/above max_fee_bps \(30\)/);
    const capped = await planRebalance(
      input(chains, [at('BASE', 1_000n * U), at('ARB', 50n * U)], { maxTotal: 100n * U }),
    );
    expect(capped.skipped[0]?.reason).toMatch(/past max_total/);
    expect(capped.short).toEqual([{ chain: 'ARB', missing: 150n * U }]);
  });

  it('plans nothing when every chain is at or above its min', async () => {
    const plan = await planRebalance(
      input(
        [
          { chain: 'BASE', min: 10n * U, target: 20n * U },
          { chain: 'ARB', min: null, target: 0n },
        ],
        [at('BASE', 15n * U), at('ARB', 100n * U)],
      ),
    );
    expect(plan.moves).toEqual([]);
    expect(plan.chains.map((c) => c.state)).toEqual(['ok', 'spare']);
  });

  it('skips a donor whose estimate fails and takes the next', async () => {
    const base = feeModel(0n, 1n);
    const plan = await planRebalance(
      input(
        [
          { chain: 'BASE', min: null, target: 0n },
          { chain: 'ARB', min: null, target: 0n },
          { chain: 'SOLANA', min: 10n * U, target: 20n * U },
        ],
        [at('BASE', 100n * U), at('ARB', 50n * U), at('SOLANA', 0n)],
        {
          estimate: async (from, to, amount) => {
            if (from === 'BASE') throw new Error('service unavailable');
            return base(from, to, amount);
          },
        },
      ),
    );
    expect(plan.skipped[0]).toMatchObject({ from: 'BASE', to: 'SOLANA', reason: /service unavailable/ });
    expect(plan.moves.map((m) => m.id)).toEqual(['rb-ARB-SOLANA']);
  });
});

describe('rebalance planner: properties', () => {
  const chainArb = fc.record({
    min: fc.option(fc.bigInt({ min: 0n, max: 50_000n }), { nil: null }),
    extra: fc.bigInt({ min: 0n, max: 50_000n }),
    position: fc.bigInt({ min: 0n, max: 120_000n }),
    cents: fc.bigInt({ min: 0n, max: 99n }),
  });
  const scenario = fc.record({
    chains: fc.uniqueArray(fc.constantFrom(...CHAINS), { minLength: 1, maxLength: 5 }),
    specs: fc.array(chainArb, { minLength: 5, maxLength: 5 }),
    minMove: fc.bigInt({ min: 1n, max: 2_000n }),
    maxTotal: fc.option(fc.bigInt({ min: 1n, max: 200_000n }), { nil: null }),
    flat: fc.bigInt({ min: 0n, max: 5n * U }),
    bps: fc.bigInt({ min: 0n, max: 40n }),
  });
  type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;
  const build = (s: Scenario) => {
    const targets: ChainTarget[] = s.chains.map((chain, i) => {
      const spec = s.specs[i]!;
      return {
        chain,
        min: spec.min === null ? null : spec.min * U,
        target: ((spec.min ?? 0n) + spec.extra) * U,
      };
    });
    const positions = s.chains.map((chain, i) =>
      at(chain, s.specs[i]!.position * U + s.specs[i]!.cents * CENT),
    );
    return input(targets, positions, {
      minMove: s.minMove * U,
      maxTotal: s.maxTotal === null ? null : s.maxTotal * U,
      estimate: feeModel(s.flat, s.bps),
      maxFeeBps: 30n,
    });
  };

  it('never takes a donor under its target, nets cover needs within a cent, respects min_move and max_total, and is deterministic', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const plan = await planRebalance(build(s));
        const again = await planRebalance(build(s));
        expect(again).toEqual(plan);
        let total = 0n;
        for (const m of plan.moves) {
          expect(m.amount).toBeGreaterThanOrEqual(s.minMove * U);
          expect(m.amount).toBe(m.netReceive + m.fee);
          total += m.amount;
        }
        if (s.maxTotal !== null) expect(total).toBeLessThanOrEqual(s.maxTotal * U);
        expect(new Set(plan.moves.map((m) => m.id)).size).toBe(plan.moves.length);
        for (const c of plan.chains) {
          const out = plan.moves.filter((m) => m.from === c.chain).reduce((a, m) => a + m.amount, 0n);
          const inn = plan.moves.filter((m) => m.to === c.chain).reduce((a, m) => a + m.netReceive, 0n);
          if (out > 0n) {
            expect(inn).toBe(0n);
            expect(c.position - out).toBeGreaterThanOrEqual(c.target);
          }
          if (inn > 0n) {
            const need = c.target - c.position;
            // Never served past the need by a cent or more.
            expect(c.after - c.target).toBeLessThan(CENT);
            expect(inn).toBeLessThan(need + CENT);
          }
          expect(plan.short.some((x) => x.chain === c.chain)).toBe(c.min !== null && c.after < c.target);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('policy file', () => {
  it('parses a policy to exact micro-USDC, in chain order, with defaults', () => {
    const r = parsePolicy(
      'chains:\n  SOLANA: { min: 1000, target: "5000.5" }\n  BASE: { min: 5000, target: 20000 }\n  ETH: { target: 0 }\nmax_total: 100000\n',
      '/tmp/nightly.yaml',
    );
    expect(r).toEqual({
      ok: true,
      policy: {
        name: 'nightly',
        chains: [
          { chain: 'ETH', min: null, target: 0n },
          { chain: 'BASE', min: 5_000n * U, target: 20_000n * U },
          { chain: 'SOLANA', min: 1_000n * U, target: 5_000_500_000n },
        ],
        minMove: U,
        maxFeeBps: null,
        maxTotal: 100_000n * U,
        via: null,
      },
    });
  });

  it('reports every problem at once, each with its key path', () => {
    const r = parsePolicy(
      '{"chains": {"ARB": {"min": 9000, "target": 8000}, "FOO": {"target": 1}, "BASE": {"target": "1.0000001", "max": 3}}, "min_move": -1, "max_fee_bps": 1.5, "extra": true}',
      'p.json',
    );
    expect(r.ok).toBe(false);
    const problems = r.ok ? [] : r.problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        'chains.ARB.min: must not exceed target',
        expect.stringMatching(/^chains\.FOO: unknown chain/),
        expect.stringMatching(/^chains\.BASE\.target: must be an amount in USDC.*more than 6 decimals/),
        'chains.BASE.max: unknown key',
        expect.stringMatching(/^min_move: must be an amount/),
        'max_fee_bps: must be a whole number of basis points from 0 to 10000 (30 is 0.3 %), not 1.5',
        'extra: unknown key',
      ]),
    );
    expect(problems).toHaveLength(7);
  });

  it('refuses YAML that is not a policy: syntax, duplicate keys, no chains, a bad name', () => {
    expect(parsePolicy('chains: [', 'p.yaml')).toMatchObject({ ok: false });
    expect(parsePolicy('chains:\n  ARB: {target: 1}\n  ARB: {target: 2}\n', 'p.yaml')).toMatchObject({
      ok: false,
      problems: ['chains.ARB: is given twice'],
    });
    expect(parsePolicy('chains: {}\n', 'p.yaml')).toEqual({
      ok: false,
      problems: ['chains: must name at least one chain'],
    });
    expect(parsePolicy('name: "a b"\nchains: {ARB: {target: 1}}\n', 'p.yaml')).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^name: /)],
    });
  });
});
