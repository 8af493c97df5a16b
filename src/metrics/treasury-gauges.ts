import type { Redis } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';
import { MICRO_PER_USDC } from '../domain/money.ts';
import { rebalanceSchedules, storedTreasuryBalances } from '../store/treasury-flows.ts';
import { parsePolicy } from '../treasury/policy.ts';

/**
 * The treasury's series on `/metrics` (docs/rebalancing.md), read from Redis at scrape
 * time: `usdc_batch_treasury_balance_usdc{chain}` (as the workers last read it, every
 * TREASURY_BALANCE_INTERVAL_MS) and, for each scheduled rebalancing policy,
 * `usdc_batch_treasury_min_usdc{chain,policy}` and `usdc_batch_treasury_target_usdc{chain,policy}`.
 */
const usdcValue = (micro: bigint) => Number(micro) / Number(MICRO_PER_USDC);

export function registerTreasuryGauges(
  registry: Registry,
  deps: { readonly redis: Redis; readonly prefix: string },
) {
  const balance = new Gauge({
    name: 'usdc_batch_treasury_balance_usdc',
    help: "The treasury's USDC on a chain (every EVM owner's balanceOf; the Solana keypair's USDC account), as a worker last read it.",
    labelNames: ['chain'],
    registers: [registry],
    async collect() {
      const rows = await storedTreasuryBalances(deps.redis, deps.prefix);
      this.reset();
      for (const r of rows) this.set({ chain: r.chain }, usdcValue(r.balance));
    },
  });
  const policies = async () =>
    (await rebalanceSchedules(deps.redis, deps.prefix)).flatMap((s) => {
      const parsed = parsePolicy(s.policyText, s.policyFile);
      return parsed.ok ? [parsed.policy] : [];
    });
  const min = new Gauge({
    name: 'usdc_batch_treasury_min_usdc',
    help: 'A scheduled rebalancing policy’s min for a chain (chains without a min have no series).',
    labelNames: ['chain', 'policy'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const p of await policies())
        for (const c of p.chains)
          if (c.min !== null) this.set({ chain: c.chain, policy: p.name }, usdcValue(c.min));
    },
  });
  const target = new Gauge({
    name: 'usdc_batch_treasury_target_usdc',
    help: 'A scheduled rebalancing policy’s target for a chain.',
    labelNames: ['chain', 'policy'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const p of await policies())
        for (const c of p.chains) this.set({ chain: c.chain, policy: p.name }, usdcValue(c.target));
    },
  });
  return { balance, min, target };
}
