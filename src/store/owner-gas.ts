import type { Redis } from 'ioredis';
import { isEvmChain, type EvmChain } from '../domain/chains.ts';

/*
 * Each EVM owner's native gas per chain as a worker last read it (src/treasury/balance-sampler.ts),
 * for `/metrics` (`usdc_batch_owner_gas_native{chain,owner}`): one hash, `P:owner-gas`, a field
 * `<CHAIN>|<owner>` holding `<wei>|<gas price, wei>|<ms read at>`. A reading that fails leaves the
 * last one in place.
 */

export type OwnerGasReading = {
  readonly chain: EvmChain;
  readonly owner: string;
  /** The owner's native balance, wei. */
  readonly wei: bigint;
  /** The chain's gas price when it was read, wei per gas. */
  readonly gasPrice: bigint;
};

const ownerGasKey = (prefix: string) => `${prefix}:owner-gas`;
const WEI = /^[0-9]{1,80}$/;

export async function saveOwnerGas(
  redis: Redis,
  prefix: string,
  readings: readonly OwnerGasReading[],
  at: number,
): Promise<void> {
  if (readings.length === 0) return;
  const fields: Record<string, string> = {};
  for (const r of readings) fields[`${r.chain}|${r.owner}`] = `${r.wei}|${r.gasPrice}|${at}`;
  await redis.hset(ownerGasKey(prefix), fields);
}

/** The stored readings, parsed at the edge: a field of another shape is left out. */
export async function storedOwnerGas(
  redis: Redis,
  prefix: string,
): Promise<(OwnerGasReading & { readonly at: number })[]> {
  const h = await redis.hgetall(ownerGasKey(prefix));
  const out: (OwnerGasReading & { at: number })[] = [];
  for (const [field, value] of Object.entries(h)) {
    const [chain = '', owner = ''] = field.split('|');
    const [wei = '', gasPrice = '', at = ''] = value.split('|');
    if (!isEvmChain(chain) || owner === '' || !WEI.test(wei) || !WEI.test(gasPrice)) continue;
    out.push({ chain, owner, wei: BigInt(wei), gasPrice: BigInt(gasPrice), at: Number(at) || 0 });
  }
  return out;
}
