import type { Chain } from '../domain/chains.ts';
import { parseUsdc } from '../domain/money.ts';
import type { SandboxConfig } from './sandbox-config.ts';

type SandboxFee = { platform: bigint; gas: bigint; total: bigint; netReceive: bigint };

/**
 * The sandbox's deterministic fee: `feeBps` of the amount (rounded up, never in the payer's
 * favour) plus the gas of the source and destination chains. Undefined when the amount does not
 * cover the fee (the service refuses such a transfer).
 */
export function sandboxFee(
  config: SandboxConfig,
  from: Chain,
  to: Chain,
  amount: bigint,
): SandboxFee | undefined {
  const platform = (amount * BigInt(config.feeBps) + 9_999n) / 10_000n;
  const gas = parseUsdc(config.gasFee[from], 'gas') + parseUsdc(config.gasFee[to], 'gas');
  const total = platform + gas;
  if (amount <= total) return undefined;
  return { platform, gas, total, netReceive: amount - total };
}
