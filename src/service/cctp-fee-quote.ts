import { CCTP_DOMAIN, cctpFeeFor, finalityThresholdOf } from '../domain/cctp.ts';
import { feeBpsFor, type CctpFeeQuote } from '../domain/cctp-answers.ts';
import { isEvmChain, type Chain, type EvmChain } from '../domain/chains.ts';
import type { TransferRoad } from '../domain/roads.ts';
import { createLocalRateLimiter } from '../store/rate-limiter.ts';
import { CCTP_API_PER_SECOND } from '../store/cctp-gate.ts';
import { createCctpApi, type CctpApi, type CctpApiGate } from './cctp-api.ts';
import type { FeeEstimate } from './types.ts';

/*
 * Circle's fee for a transfer on a CCTP road, as the worker's estimate step computes it
 * (docs/cctp.md "The flow", step 1): the fee route's basis points for the road's finality, of the
 * amount, rounded up. What `enqueue --dry-run` and rebalancing's plan show on a CCTP road: the fee is
 * Circle's (platform), and the gas is not in it (0): each owner pays it, in native gas.
 */

export type CctpRoad = Exclude<TransferRoad, 'service'>;

/** A CCTP road's estimate of one transfer, in the service estimate's shape (gas 0: the owner's). */
export type CctpFeeQuoter = (from: Chain, to: Chain, amount: bigint) => Promise<FeeEstimate>;

/** The finality threshold of a CCTP road (2000 Standard, 1000 Fast). */
export function cctpThresholdOf(via: CctpRoad): number {
  return finalityThresholdOf(via === 'cctp-fast' ? 'fast' : 'standard');
}

/**
 * Estimates on `via` through `api`; the fee route is asked once per (source, destination) route and
 * its quotes reused. Throws (a reason, per transfer) when the route cannot be estimated.
 */
export function createCctpFeeQuoter(api: CctpApi, via: CctpRoad): CctpFeeQuoter {
  const threshold = cctpThresholdOf(via);
  const routes = new Map<string, Promise<readonly CctpFeeQuote[]>>();
  const quotesOf = (from: EvmChain, to: EvmChain) => {
    const key = `${from}>${to}`;
    let p = routes.get(key);
    if (!p) {
      p = askFees(api, from, to);
      routes.set(key, p);
      // A failed ask is not kept: the next transfer asks again.
      p.catch(() => routes.delete(key));
    }
    return p;
  };
  return async (from, to, amount) => {
    if (!isEvmChain(from) || !isEvmChain(to))
      throw new Error(`the ${via} road is EVM to EVM only, not ${from}→${to}`);
    const bps = feeBpsFor(await quotesOf(from, to), threshold);
    if (bps === undefined) throw new Error(`Circle quotes no fee for finality ${threshold} on ${from}→${to}`);
    const fee = cctpFeeFor(amount, bps);
    return { amount, fee: { total: fee, platform: fee, gas: 0n }, netReceive: amount - fee };
  };
}

async function askFees(api: CctpApi, from: EvmChain, to: EvmChain): Promise<readonly CctpFeeQuote[]> {
  const res = await api.fees(CCTP_DOMAIN[from], CCTP_DOMAIN[to]);
  if (res.kind === 'ok') return res.value;
  if (res.kind === 'paused')
    throw new Error(`Circle's API is paused after a 429 (${Math.ceil(res.ms / 1000)} s left)`);
  if (res.kind === 'not-found') throw new Error(`Circle's fee route answered 404 for ${from}→${to}`);
  throw new Error(`Circle's fee route: ${res.problem}`);
}

/**
 * A gate for one process that needs no Redis (a dry run): under Circle's per-second limit, and a 429
 * pauses this process's asking (the workers' shared gate is src/store/cctp-gate.ts).
 */
export function localCctpGate(): CctpApiGate {
  const limiter = createLocalRateLimiter(CCTP_API_PER_SECOND);
  let until = 0;
  return {
    pausedFor: () => Promise.resolve(Math.max(0, until - Date.now())),
    pause: (ms) => {
      until = Date.now() + ms;
      return Promise.resolve();
    },
    take: () => limiter.take(),
  };
}

/** The fee quoter of a process without the workers' shared gate (a dry run, a plan). */
export function cctpFeeQuoterAt(
  baseUrl: string,
  via: CctpRoad,
  gate: CctpApiGate = localCctpGate(),
): CctpFeeQuoter {
  return createCctpFeeQuoter(createCctpApi({ baseUrl, gate }), via);
}
