import type { Redis } from 'ioredis';
import { checksumEvmAddress } from '../domain/addresses.ts';
import type { EvmChain } from '../domain/chains.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';
import { replyArray, replyBigint, replyInt } from './lua-reply.ts';

/*
 * What each treasury owner's USDC balance is already promised to, so that two workers never spend
 * the same balance and a lagging RPC never counts a payment twice (issue 17, docs/configuration.md).
 *
 * HASH `P:reserve:<CHAIN>:<owner>`: field `<batchId>/<transferId>` → `<amount>|<tx hash>|<mined>`
 * (micro-USDC; the transfer's source transaction once the service accepted it; the block it was
 * mined in, once a receipt showed it), field `_floor`: the highest block a decision was made at,
 * and field `_floor_balance`: the balance read at that block.
 *
 * An owner can pay a transfer when `balanceOf(owner)` at a known block B, minus every reservation
 * not yet reflected at B, covers it. A reservation is reflected at B once its transaction was mined
 * at or before B: the balance read there already lacks that money, so the entry is dropped (every
 * later decision is made at B or above: `_floor` refuses an older reading, which a lagging or
 * load-balanced RPC could give, or another worker's reading taken before the one that moved the
 * floor; the balance read at `_floor` decides in its place when it covers the amount, else the
 * caller reads again). Until then it is subtracted, however far behind the RPC is. An
 * entry is released at once when its permit provably died (the transfer ends failed or rejected,
 * or is cancelled), and dropped when the service gave no transaction hash once the transfer's
 * intent reached a final status.
 */

export type BalanceReading = { readonly balance: bigint; readonly block: bigint };

/** An accepted send: its source transaction (null when the service gave none), and what its run reserved. */
export type SentTx = { readonly txHash: string | null; readonly reserved?: bigint | undefined };

/** A receipt's answer: `holder`'s accepted transaction `txHash` was mined at `block`. */
export type MinedTx = { readonly holder: string; readonly txHash: string; readonly block: bigint };

export type Reserved = { readonly holder: string; readonly amount: bigint; readonly txHash: string | null };

export type ReserveResult =
  | { readonly ok: true }
  /** The owner's free balance at the reading does not cover the amount. */
  | { readonly ok: false; readonly stale: false; readonly free: bigint }
  /**
   * The reading is older than a block a decision was already made at, and the balance read there
   * does not cover the amount either: read again.
   */
  | { readonly ok: false; readonly stale: true; readonly floor: bigint };

/** The reservations' scripts (scripts/balance-*.lua). */
const RESERVE = luaScriptFile('balance-reserve.lua');
const NOTE_SENT = luaScriptFile('balance-note-sent.lua');
const NOTE_MINED = luaScriptFile('balance-note-mined.lua');
const DROP_UNHASHED = luaScriptFile('balance-drop-unhashed.lua');

export type OwnerBalances = ReturnType<typeof createOwnerBalances>;

export function ownerReserveKey(prefix: string, chain: EvmChain, owner: string): string {
  return `${prefix}:reserve:${chain}:${checksumEvmAddress(owner)}`;
}

function parseEntries(flat: Record<string, string>): Reserved[] {
  const out: Reserved[] = [];
  for (const [holder, v] of Object.entries(flat)) {
    if (holder === '_floor' || holder === '_floor_balance') continue; // the script's own fields
    const [amount, tx, mined] = v.split('|');
    if (mined) continue; // mined: only waiting for a reading at its block to be dropped
    out.push({ holder, amount: BigInt(amount ?? '0'), txHash: tx ? tx : null });
  }
  return out;
}

/** The reservations of every owner's balance, per chain (see the comment at the top). */
export function createOwnerBalances(deps: { redis: Redis; prefix: string }) {
  const { redis, prefix } = deps;
  const key = (chain: EvmChain, owner: string) => ownerReserveKey(prefix, chain, owner);
  const recordKey = (holder: string) => {
    const slash = holder.indexOf('/');
    return keys(prefix).transfer(holder.slice(0, slash), holder.slice(slash + 1));
  };
  return {
    /**
     * Reserves `amount` of `owner`'s balance for `holder` (`batchId/transferId`), if the reading
     * covers it beside what is reserved already; `named` is the owner its record names now.
     */
    async reserve(
      chain: EvmChain,
      owner: string,
      claim: { readonly holder: string; readonly amount: bigint; readonly named: string | null },
      reading: BalanceReading,
    ): Promise<ReserveResult> {
      const { holder, amount, named } = claim;
      const args = [holder, amount.toString(), reading.balance.toString(), reading.block.toString(), owner];
      const ks = [key(chain, owner), recordKey(holder), key(chain, named ?? owner)];
      const r = replyArray('balance-reserve.lua', await runScript(redis, RESERVE, ks, args));
      const code = replyInt('balance-reserve.lua', r[0]);
      if (code === 1) return { ok: true };
      const said = replyBigint('balance-reserve.lua', r[1]);
      if (code === 2) return { ok: false, stale: true, floor: said };
      return { ok: false, stale: false, free: said };
    },
    /** The reservations of `owner` on `chain` not yet seen mined. */
    async pending(chain: EvmChain, owner: string): Promise<Reserved[]> {
      return parseEntries(await redis.hgetall(key(chain, owner)));
    },
    /**
     * The service accepted `holder`'s transfer; its source transaction is `sent.txHash` (or unknown).
     * `sent.reserved`: the amount the caller's own run reserved for it on `owner`, so its entry is
     * known to be there (nothing else drops an entry not yet mined while its transfer is in
     * progress): then the entry is written in one HSET, as the script would write it, nothing read.
     */
    async noteSent(chain: EvmChain, owner: string, holder: string, sent: SentTx): Promise<void> {
      const txHash = sent.txHash ?? '';
      if (sent.reserved !== undefined)
        await redis.hset(key(chain, owner), holder, `${sent.reserved}|${txHash}|`);
      else await runScript(redis, NOTE_SENT, [key(chain, owner)], [holder, txHash]);
    },
    /** Receipts showed these holders' accepted transactions mined (one script call for all of them). */
    async noteMined(chain: EvmChain, owner: string, mined: readonly MinedTx[]): Promise<void> {
      if (mined.length === 0) return;
      const args = mined.flatMap((m) => [m.holder, m.txHash, m.block.toString()]);
      await runScript(redis, NOTE_MINED, [key(chain, owner)], args);
    },
    /** Drops `holder`'s reservation on `owner`: its permit died, or it was never sent. */
    async release(chain: EvmChain, owner: string, holder: string): Promise<void> {
      await redis.hdel(key(chain, owner), holder);
    },
    /** Drops the reservation of a transfer that ends without paying, on the owner its record names. */
    async releaseOf(rec: ReservingTransfer): Promise<void> {
      await releaseOwnerReservation(redis, prefix, rec);
    },
  };
}

/** A transfer as the functions below need it (a TransferRecord is one). */
type ReservingTransfer = {
  readonly batchId: string;
  readonly id: string;
  readonly from: string;
  readonly raw: Readonly<Record<string, string>>;
};

/** The reservations key of the owner the record names, and the transfer's field in it. */
function reservationOf(prefix: string, rec: ReservingTransfer): { key: string; holder: string } | undefined {
  const owner = rec.raw['owner'];
  if (!owner || rec.from === 'SOLANA') return undefined;
  return { key: ownerReserveKey(prefix, rec.from as EvmChain, owner), holder: `${rec.batchId}/${rec.id}` };
}

/**
 * Releases the balance reservation of a transfer that ends without paying (cancelled, failed,
 * settled unused): on the owner its record names, the only one that can hold one.
 */
export async function releaseOwnerReservation(
  redis: Redis,
  prefix: string,
  rec: ReservingTransfer,
): Promise<void> {
  const r = reservationOf(prefix, rec);
  if (r) await redis.hdel(r.key, r.holder);
}

/**
 * The transfer's intent reached a final status (or is not followed): a reservation the service
 * gave no transaction hash for — no receipt can ever show it mined — ends here. One with a hash
 * stays until a balance reading at or past its block drops it. A record with a `tx_hash` needs no
 * look: its hash is written only with the accepted send's outcome, after noteSent gave the
 * reservation that same hash (pipeline/evm/evm-flow.ts), so its reservation has a hash or is gone.
 */
export async function dropUnhashedReservation(
  redis: Redis,
  prefix: string,
  rec: ReservingTransfer,
): Promise<void> {
  if (rec.raw['tx_hash']) return;
  const r = reservationOf(prefix, rec);
  if (r) await runScript(redis, DROP_UNHASHED, [r.key], [r.holder]);
}
