import type { Redis } from 'ioredis';
import { isEvmChain, type Chain, type EvmChain } from '../domain/chains.ts';
import { createChainReader, minedBlocks } from '../signing/evm/chain-reader.ts';
import { createOwnerBalances, type Reserved } from '../store/owner-balance.ts';
import { movingTransfers, type MovingTransfer } from '../store/treasury-flows.ts';
import type { ChainBalance, TreasuryAddresses, TreasuryConfig } from './balances.ts';
import type { ChainPosition } from './planner.ts';

/**
 * A chain's position (docs/rebalancing.md): its balance, minus `outgoing` — transfers
 * from it that are queued, held, in progress, or submitted but not yet shown by the chain — plus
 * `incoming` — the net of submitted transfers to the treasury's own addresses there whose intents
 * are not final yet.
 *
 * "Not yet shown by the chain": on EVM, a payment's owner reservation until a receipt shows its
 * transaction mined (the reservations `wallets` reports as in flight); on Solana, a submitted
 * transfer without a transaction signature recorded (one with a signature was sent by the service
 * and its debit is what the chain shows).
 */

export type TreasuryPosition = ChainPosition & { readonly owners: ChainBalance['owners'] };

/** Receipts looked up per (owner, chain) at most; reservations beyond count as in flight. */
const RECEIPTS_READ = 50;

const holderOf = (t: Pick<MovingTransfer, 'batchId' | 'id'>) => `${t.batchId}/${t.id}`;

/** Whether `recipient` on `to` is one of the treasury's own addresses. */
export function isTreasuryAddress(addresses: TreasuryAddresses, to: Chain, recipient: string): boolean {
  if (isEvmChain(to)) return addresses.evmOwners.some((o) => o.toLowerCase() === recipient.toLowerCase());
  return (
    addresses.solana !== null &&
    (recipient === addresses.solana.address || recipient === addresses.solana.usdcAccount)
  );
}

/** EVM reservations of every owner on `chain` and which of them the chain does not show mined yet. */
async function evmReservations(
  deps: PositionDeps,
  chain: EvmChain,
  owners: readonly string[],
): Promise<{ all: Set<string>; unmined: Reserved[] }> {
  const balances = createOwnerBalances({ redis: deps.redis, prefix: deps.prefix });
  const reader = createChainReader({ config: deps.config, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  const all = new Set<string>();
  const unmined: Reserved[] = [];
  await Promise.all(
    owners.map(async (owner) => {
      const entries = await balances.pending(chain, owner);
      for (const e of entries) all.add(e.holder);
      const mined = await minedBlocks(reader, chain, entries, RECEIPTS_READ);
      unmined.push(...entries.filter((e) => !mined.has(e.holder)));
    }),
  );
  return { all, unmined };
}

export type PositionDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly config: TreasuryConfig;
  readonly fetch?: typeof fetch;
};

/** The positions of `balances`' chains, from what the store holds now. */
export async function treasuryPositions(
  deps: PositionDeps,
  addresses: TreasuryAddresses,
  balances: readonly ChainBalance[],
): Promise<TreasuryPosition[]> {
  const moving = await movingTransfers(deps.redis, deps.prefix);
  return await Promise.all(
    balances.map(async (b): Promise<TreasuryPosition> => {
      let outgoing = 0n;
      const from = moving.filter((t) => t.from === b.chain);
      if (isEvmChain(b.chain)) {
        const reserved = await evmReservations(deps, b.chain, addresses.evmOwners);
        outgoing += reserved.unmined.reduce((s, r) => s + r.amount, 0n);
        for (const t of from) {
          if (t.state !== 'submitted' && !reserved.all.has(holderOf(t))) outgoing += t.amount;
        }
      } else {
        for (const t of from) {
          if (t.state !== 'submitted' || t.txSignature === null) outgoing += t.amount;
        }
      }
      const incoming = moving
        .filter(
          (t) =>
            t.state === 'submitted' && t.to === b.chain && isTreasuryAddress(addresses, t.to, t.recipient),
        )
        .reduce((s, t) => s + (t.netReceive ?? t.amount), 0n);
      return {
        chain: b.chain,
        balance: b.balance,
        owners: b.owners,
        incoming,
        outgoing,
        position: b.balance - outgoing + incoming,
      };
    }),
  );
}
