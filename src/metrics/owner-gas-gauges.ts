import type { Redis } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';
import { gasNeeded, nativeValue } from '../domain/owner-gas.ts';
import { storedOwnerGas } from '../store/owner-gas.ts';

/**
 * Each EVM owner's native gas on `/metrics` (docs/cctp.md "Funding owners with gas"), read from
 * Redis at scrape time as the workers last sampled it (TREASURY_BALANCE_INTERVAL_MS):
 * `usdc_batch_owner_gas_native{chain,owner}`, and what its next transactions cost at the chain's
 * gas price then, `usdc_batch_owner_gas_needed_native{chain,owner}` (an approval, a burn and a mint:
 * OWNER_NEXT_TXS_GAS). The alert `UsdcBatchOwnerGasLow` (deploy/prometheus/) compares the two.
 */
export function registerOwnerGasGauges(
  registry: Registry,
  deps: { readonly redis: Redis; readonly prefix: string },
) {
  const readings = () => storedOwnerGas(deps.redis, deps.prefix);
  const gas = new Gauge({
    name: 'usdc_batch_owner_gas_native',
    help: "An EVM treasury owner's native balance (ETH, POL) on a chain, which pays the gas of its own transactions on the CCTP road, as a worker last read it.",
    labelNames: ['chain', 'owner'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await readings()) this.set({ chain: r.chain, owner: r.owner }, nativeValue(r.wei));
    },
  });
  const needed = new Gauge({
    name: 'usdc_batch_owner_gas_needed_native',
    help: "Native units an owner needs for its next transactions on a chain (an approval, a burn and a mint: 400k gas) at the chain's gas price when last read.",
    labelNames: ['chain', 'owner'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await readings())
        this.set({ chain: r.chain, owner: r.owner }, nativeValue(gasNeeded(r.gasPrice)));
    },
  });
  return { gas, needed };
}
