import { bpsOf } from './money.ts';

/** The fee caps of the configuration: `MAX_FEE_BPS` of the amount, and `MAX_FEE_USDC` when set. */
export type FeeCaps = { readonly maxFeeBps: bigint; readonly maxFeeUsdc: bigint | undefined };

/** Which cap a fee is over: its basis points of the amount, or the absolute cap. */
export type FeeCapBreach =
  | { readonly cap: 'bps'; readonly bps: bigint; readonly maxFeeBps: bigint }
  | { readonly cap: 'usdc'; readonly maxFeeUsdc: bigint };

/**
 * The one fee-cap rule, for the worker's guard before signing and for the dry run's count of rows
 * it would reject: the fee's basis points of the amount, rounded up (`bpsOf`: a guard never rounds
 * in our favour), over `MAX_FEE_BPS`; else the fee over `MAX_FEE_USDC`. `undefined` when within both.
 */
export function feeCapBreach(fee: bigint, amount: bigint, caps: FeeCaps): FeeCapBreach | undefined {
  const bps = bpsOf(fee, amount);
  if (bps > caps.maxFeeBps) return { cap: 'bps', bps, maxFeeBps: caps.maxFeeBps };
  if (caps.maxFeeUsdc !== undefined && fee > caps.maxFeeUsdc)
    return { cap: 'usdc', maxFeeUsdc: caps.maxFeeUsdc };
  return undefined;
}

/**
 * The guard's decision as its step's line says it: the fee within both caps, or over which one
 * (the rejection that follows gives the figures). The fee is named unless the line just before
 * said it (a fresh estimate).
 */
export function feeGuardLine(fee: string | undefined, breach: FeeCapBreach | undefined): string {
  const what = fee === undefined ? 'fee' : `fee ${fee} USDC`;
  if (!breach) return `${what} within MAX_FEE_BPS and MAX_FEE_USDC`;
  return `${what} over ${breach.cap === 'bps' ? 'MAX_FEE_BPS' : 'MAX_FEE_USDC'}`;
}
