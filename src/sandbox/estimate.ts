import { isChain, isValidRoute } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import { sandboxFee } from './fee-model.ts';
import { readAmount } from './request-fields.ts';
import { err, str, type Reply, type ServiceState } from './service-state.ts';

/** `POST /sdk/v1/estimate`: the sandbox's deterministic fee for a route and amount. */
export function estimate(s: ServiceState, body: Record<string, unknown>): Reply {
  const from = str(body, 'from');
  const to = str(body, 'to');
  if (!from || !isChain(from))
    return err(400, 'invalid_chain', 'from must be ETH, BASE, ARB, POLYGON or SOLANA');
  if (!to || !isChain(to)) return err(400, 'invalid_chain', 'to must be ETH, BASE, ARB, POLYGON or SOLANA');
  if (!isValidRoute(from, to)) return err(400, 'invalid_route', 'from SOLANA, to must be an EVM chain');
  const amount = readAmount(body);
  if (typeof amount !== 'bigint') return amount;
  const fee = sandboxFee(s.config, from, to, amount);
  if (!fee) return err(400, 'amount_below_fee', 'amount does not cover the fee');
  return {
    status: 200,
    body: {
      amount: formatUsdc(amount),
      fee: { total: formatUsdc(fee.total), platform: formatUsdc(fee.platform), gas: formatUsdc(fee.gas) },
      net_receive: formatUsdc(fee.netReceive),
    },
  };
}
