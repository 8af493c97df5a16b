import type { Chain } from '../domain/chains.ts';
import { formatUsdc } from '../domain/money.ts';
import type { TransferRequest } from '../domain/transfer.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import { cutsForScreen, table } from './format.ts';
import { shortAddress } from '../domain/addresses.ts';

/** An account the demo shows: who, on which chain, at which address. */
export type DemoAccount = { readonly who: string; readonly chain: Chain; readonly address: string };

/** The demo's treasury on every source chain its rows use, then each row's recipient on its destination. */
export function demoAccounts(
  rows: readonly TransferRequest[],
  treasury: { evm: string; solana: string },
): DemoAccount[] {
  const sources = [...new Set(rows.map((r) => r.from))].sort();
  const accounts: DemoAccount[] = sources.map((chain) => ({
    who: 'treasury',
    chain,
    address: chain === 'SOLANA' ? treasury.solana : treasury.evm,
  }));
  for (const r of rows) accounts.push({ who: `recipient of ${r.id}`, chain: r.to, address: r.recipient });
  return accounts;
}

/** Each account's USDC (base units) read from the sandbox's chains (anvil, LiteSVM), not from its ledger. */
export async function readChainBalances(
  sandbox: Sandbox,
  accounts: readonly DemoAccount[],
): Promise<bigint[]> {
  const rows = await sandbox.admin.balances([...new Set(accounts.map((a) => a.address))]);
  return accounts.map((a) => {
    const row = rows.find((r) => r.chain === a.chain && r.address.toLowerCase() === a.address.toLowerCase());
    return row ? BigInt(row.base_units) : 0n;
  });
}

export function balancesTable(
  accounts: readonly DemoAccount[],
  before: readonly bigint[],
  after: readonly bigint[],
): string {
  // Shortened on a terminal only: a pipe or a file gets each address whole.
  const cut = cutsForScreen();
  const short = (a: string) => (cut ? shortAddress(a) : a);
  return table(
    ['account', 'chain', 'address', 'before', 'after', 'change'],
    accounts.map((a, i) => {
      const b = before[i] ?? 0n;
      const f = after[i] ?? 0n;
      return [
        a.who,
        a.chain,
        short(a.address),
        formatUsdc(b),
        formatUsdc(f),
        `${f >= b ? '+' : ''}${formatUsdc(f - b)}`,
      ];
    }),
  );
}
