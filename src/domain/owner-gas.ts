/*
 * An EVM owner's native gas (docs/cctp.md "Funding owners with gas"). On the CCTP road the
 * treasury owner pays for its own transactions: on the source chain an approval (when the allowance
 * is spent) and the burn (`depositForBurn`), on the destination chain the mint (`receiveMessage`).
 * One owner on one chain may be either side, so an owner "can pay for its next transactions" when
 * it holds enough for all three at the chain's current gas price.
 */

/**
 * Gas of an approval (~50k), a burn (~150k) and a mint (~200k) on Circle's CCTP v2 contracts,
 * rounded up: a floor for one more transfer in each direction, not a budget for a batch.
 */
export const OWNER_NEXT_TXS_GAS = 400_000n;

/** Wei per native unit (ETH, POL): 18 decimals on every EVM chain this tool pays on. */
const WEI_PER_NATIVE = 10n ** 18n;

/** Wei an owner needs to pay for its next transactions at `gasPrice` (wei per gas). */
export function gasNeeded(gasPrice: bigint): bigint {
  return gasPrice * OWNER_NEXT_TXS_GAS;
}

/** Wei as a decimal native amount (`0.0123`, `10`), exact: no float. */
export function formatNative(wei: bigint): string {
  const sign = wei < 0n ? '-' : '';
  const abs = wei < 0n ? -wei : wei;
  const whole = abs / WEI_PER_NATIVE;
  const frac = (abs % WEI_PER_NATIVE).toString().padStart(18, '0').replace(/0+$/, '');
  return `${sign}${whole}${frac === '' ? '' : `.${frac}`}`;
}

/** Wei as a number of native units, for a gauge (a float is fine for a graph, never for a payment). */
export function nativeValue(wei: bigint): number {
  return Number(wei) / 1e18;
}
