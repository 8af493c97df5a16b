import { checksumEvmAddress, shortAddress } from '../../domain/addresses.ts';
import { formatUsdc } from '../../domain/money.ts';
import {
  NonceLeaseBusyError,
  NoncePoolHeldError,
  SigningError,
  SIGNING_ERROR_CODES,
} from '../../signing/errors.ts';
import { minedBlocks } from '../../signing/evm/chain-reader.ts';
import type { EvmSigner, NonceLease } from '../../signing/types.ts';
import type { BalanceReading, OwnerBalances } from '../../store/owner-balance.ts';
import type { RunRecord } from '../../store/saved-steps.ts';
import { current, jittered, Later, noteWritten, saveStep, type Ctx } from '../context.ts';
import { HELD_RECHECK_MS } from './evm-refused-permit.ts';
import { readOwnerBalance } from './owner-balance-reading.ts';
import { waitQueued } from '../outcomes.ts';
import { holderOf, type EvmRun } from './owner-turn.ts';

/*
 * Which treasury owner pays an EVM transfer (issue 17). `EVM_PRIVATE_KEY` may hold several keys;
 * each is an owner with its own permit nonces per chain. A transfer is given the first owner of its
 * source chain whose nonce lease is free and whose USDC balance covers the amount (reserved
 * atomically in Redis, store/owner-balance.ts), and keeps it for life once a permit was signed,
 * `retry` included: a new permit for a transfer is only ever signed by the owner of the earlier ones,
 * so at most one permit of the transfer can execute (they share one nonce sequence). A row no owner
 * can cover waits `queued` with the reason, never fails for it. Without `EVM_RPC_URL_<CHAIN>` there
 * is no balance to read: owners are chosen by free lease alone.
 */

export { holderOf } from './owner-turn.ts';

/** A row that no owner can cover looks again after this long (±25 %). */
const SHORT_RECHECK_MS = 30_000;

/** The owner, its lease, and whether this run reserved the amount on its balance (owner-turn.ts). */
export type OwnedLease = {
  readonly signer: EvmSigner;
  readonly lease: NonceLease;
  readonly reserved: boolean;
};

/**
 * The owner whose permit pays this transfer, with its nonce lease held. Throws Later (or waits
 * `queued`) while no owner can take it.
 */
export async function leaseAnOwner(evmRun: EvmRun, prepareWith?: PrepareWith): Promise<OwnedLease> {
  const { ctx, evm } = evmRun;
  const rec = current(ctx);
  const run: Run = { ...evmRun, prepareWith, coveredOn: undefined };
  const fixed = fixedOwner(rec);
  if (fixed !== null) {
    const signer = evm.signers.find((s) => s.address === fixed);
    if (!signer) {
      // Queued again, with the reason shown, for a worker that has that owner's key.
      return await waitQueued(
        ctx,
        `owner ${fixed} signed this transfer's permit and only it may sign again; this worker has no key for it`,
        jittered(ctx, 30_000),
        'no_key',
      );
    }
    const lease = await waitForLease(run, signer);
    // A permit that may have left keeps the reservation it was sent with; any other (none yet, one
    // prepared, one never sent) needs the amount reserved before it goes.
    if (!rec.steps.uncertain) await coverOrWait(run, signer, lease);
    return { signer, lease, reserved: run.coveredOn === signer.address };
  }
  const order = preferSaved(evm.signers, rec.steps.owner);
  if (order.length === 1) {
    const signer = order[0] as EvmSigner;
    const lease = await waitForLease(run, signer);
    await coverOrWait(run, signer, lease);
    return await chosen(run, signer, lease);
  }
  return await chooseAmong(run, order);
}

/** Given the owner a waiting transfer may prepare for, what prepares its next permit (nonce-manager.ts). */
export type PrepareWith = (signer: EvmSigner) => (nonce: bigint) => Promise<boolean>;

/** One run's choice: the owner its balance was last reserved on (its transfer is the run's). */
type Run = EvmRun & { readonly prepareWith: PrepareWith | undefined; coveredOn: string | undefined };

/** The owner a permit of this transfer was ever signed by: the only one that may sign it again. */
export function fixedOwner(rec: RunRecord): string | null {
  const { owner, payloadGen } = rec.steps;
  if (owner && (payloadGen ?? 0) >= 1) return checksumEvmAddress(owner);
  return null;
}

function preferSaved(signers: readonly EvmSigner[], saved: string | null): readonly EvmSigner[] {
  if (!saved) return signers;
  const s = checksumEvmAddress(saved);
  const first = signers.find((x) => x.address === s);
  return first ? [first, ...signers.filter((x) => x !== first)] : signers;
}

/**
 * One pass over the owners in order (a free lease whose balance covers the amount wins); when every
 * lease is taken, waits for the one this process's transfers wait for least. An owner that some of
 * this process's transfers wait for is busy without a look: its lease is held, and will be handed
 * to one of them (at 8 owners a look at each cost every transfer 8 round trips before it waited).
 */
async function chooseAmong(run: Run, order: readonly EvmSigner[]): Promise<OwnedLease> {
  const { ctx, chain } = run;
  const rec = current(ctx);
  const { nonces } = run.evm;
  const short: string[] = [];
  const busy: EvmSigner[] = [];
  let held: NoncePoolHeldError | undefined;
  for (const signer of order) {
    if ((nonces.waiting?.(chain, signer.address) ?? 0) > 0) {
      busy.push(signer);
      continue;
    }
    let lease: NonceLease;
    try {
      lease = await nonces.acquire(chain, signer.address, holderOf(ctx), { once: true });
    } catch (err) {
      if (err instanceof NonceLeaseBusyError) {
        busy.push(signer);
        continue;
      }
      if (err instanceof NoncePoolHeldError) {
        held = err;
        continue;
      }
      throw err;
    }
    const why = await cover(run, signer.address);
    if (why === null) return await chosen(run, signer, lease);
    await lease.release();
    short.push(why);
  }
  if (busy.length === 0) {
    if (short.length === 0 && held) return await waitHeld(ctx, held);
    return await waitShort(run, short);
  }
  const pick = leastAwaited(run, busy);
  ctx.deps.metrics?.ownerLeaseWait?.(chain, pick.address);
  const lease = await waitForLease(run, pick);
  const why = await cover(run, pick.address);
  if (why === null) return await chosen(run, pick, lease);
  await lease.release();
  throw new Later(
    jittered(ctx, 1_000),
    `owner ${pick.address} cannot cover ${formatUsdc(rec.amount)} USDC on ${chain} (${why}); trying the other owners`,
    'balance',
  );
}

/**
 * Of the busy owners, the one fewest of this process's transfers wait for (its preparer included),
 * so that every owner has a transfer preparing its next permit; ties spread by transfer id.
 */
function leastAwaited(run: Run, busy: readonly EvmSigner[]): EvmSigner {
  const { ctx, chain } = run;
  const waiting = (s: EvmSigner) => run.evm.nonces.waiting?.(chain, s.address) ?? 0;
  const fewest = Math.min(...busy.map(waiting));
  const least = busy.filter((s) => waiting(s) === fewest);
  return least[spreadIndex(ctx.transferId, least.length)] as EvmSigner;
}

function spreadIndex(id: string, n: number): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h % n;
}

/** The owner is this transfer's from now on (until a permit is signed, another may still be chosen). */
async function chosen(run: Run, signer: EvmSigner, lease: NonceLease): Promise<OwnedLease> {
  const { ctx, chain } = run;
  const savedOwner = current(ctx).steps.owner;
  const saved = savedOwner ? checksumEvmAddress(savedOwner) : undefined;
  if (saved !== signer.address) {
    // A reservation names the owner in the record itself (owner-balance.ts); without one, here.
    if (run.coveredOn !== signer.address) await saveStep(ctx, { owner: signer.address });
    ctx.report(null, `owner ${shortAddress(signer.address)} chosen on ${chain}`);
  }
  return { signer, lease, reserved: run.coveredOn === signer.address };
}

/**
 * The lease of `signer`'s owner, waiting for it as long as the policy allows (then the job comes
 * back). While another transfer's permit is in flight, this one may prepare its next permit — once
 * its amount is reserved on that owner (a permit is only ever signed for money set aside).
 */
async function waitForLease(run: Run, signer: EvmSigner): Promise<NonceLease> {
  const { ctx, chain } = run;
  const prepareNext = run.prepareWith?.(signer);
  const prepare = prepareNext
    ? async (nonce: bigint) => (await cover(run, signer.address)) === null && (await prepareNext(nonce))
    : undefined;
  try {
    return await run.evm.nonces.acquire(chain, signer.address, holderOf(ctx), {
      signal: ctx.signal,
      // Jittered, so that transfers that came in together do not all hand their slots back at once
      // (a hand-off then finds nobody waiting and waits for one to come back from the queue).
      giveUpAfterMs: jittered(ctx, ctx.policy.leaseWaitMs),
      ...(prepare ? { prepare } : {}),
    });
  } catch (err) {
    if (err instanceof NoncePoolHeldError) return await waitHeld(ctx, err);
    if (err instanceof SigningError && err.code === SIGNING_ERROR_CODES.nonceWaitAborted) {
      ctx.deps.metrics?.ownerLeaseWait?.(chain, signer.address);
      // Another transfer of this (chain, owner) holds the nonce lease: yield the worker slot.
      throw new Later(
        50 + Math.round((ctx.deps.random ?? Math.random)() * 200),
        `waiting for the ${chain} nonce lease of ${signer.address} (another transfer is sending its permit)`,
        'nonce_lease',
      );
    }
    throw err;
  }
}

/** The owner's pool is held (a permit below may still execute): wait `queued` with its reason. */
async function waitHeld(ctx: Ctx, err: NoncePoolHeldError): Promise<never> {
  return await waitQueued(
    ctx,
    err.reason,
    jittered(ctx, Math.min(Math.max(err.retryAfterMs, 250), HELD_RECHECK_MS)),
    'nonce_pool',
  );
}

/** Reserves the amount on the owner holding `lease`, or frees the lease and waits `queued`. */
async function coverOrWait(run: Run, signer: EvmSigner, lease: NonceLease): Promise<void> {
  if (run.coveredOn === signer.address) return;
  const why = await cover(run, signer.address);
  if (why === null) return;
  await lease.release();
  await waitShort(run, [why]);
}

async function waitShort(run: Run, short: string[]): Promise<never> {
  const { ctx, chain } = run;
  const rec = current(ctx);
  const reason = `no owner's USDC balance on ${chain} covers ${formatUsdc(rec.amount)} USDC (${short.join('; ')}); waiting for a deposit or for payments in flight to land`;
  ctx.report('wait', reason);
  return await waitQueued(ctx, reason, jittered(ctx, SHORT_RECHECK_MS), 'balance');
}

/**
 * Reserves the transfer's amount on `owner`'s balance (which names the owner in its record): null
 * when reserved (or when there is no balance to read), else why not, for the reason shown.
 */
async function cover(run: Run, owner: string): Promise<string | null> {
  const { ctx, evm, chain } = run;
  const rec = current(ctx);
  const { balances } = evm;
  if (!balances || run.coveredOn === owner) return null;
  let reading: BalanceReading | undefined;
  try {
    reading = await readBalance(run, owner, false);
    if (reading === undefined) return null;
    const claim = { holder: holderOf(ctx), amount: rec.amount, named: rec.steps.owner };
    let r = await balances.reserve(chain, owner, claim, reading);
    if (!r.ok) {
      // Short or stale on a shared reading: a fresh one decides (a deposit may have landed since).
      reading = (await readBalance(run, owner, true)) as BalanceReading;
      r = await balances.reserve(chain, owner, claim, reading);
    }
    if (!r.ok && !r.stale) {
      // Short on a fresh reading: payments still counted as reserved may be in it already (landed,
      // their receipts not yet read). Read their receipts now and let the same reading decide again
      // without those mined at or before it, rather than find the owner short on money counted
      // twice and wait for the next look (~30 s for a row no owner covers).
      if ((await learnMined(run, owner, balances, true)) > 0)
        r = await balances.reserve(chain, owner, claim, reading);
    } else void learnMined(run, owner, balances);
    if (r.ok) {
      run.coveredOn = owner;
      // The reservation named the owner in the record (owner-balance.ts): the run carries it too.
      noteWritten(ctx, { patch: { owner } });
      return null;
    }
    if (r.stale)
      return `${owner}: the RPC answered from block ${reading.block}, older than block ${r.floor} already used`;
    return `${owner}: ${formatUsdc(r.free > 0n ? r.free : 0n)} USDC free`;
  } catch (err) {
    return `${owner}: balance unreadable (${err instanceof Error ? err.message.slice(0, 160) : 'error'})`;
  }
}

/** The owner's balance for a choice (owner-balance-reading.ts): shared, or fresh when asked. */
async function readBalance(run: EvmRun, owner: string, fresh: boolean): Promise<BalanceReading | undefined> {
  const { ctx, evm, chain } = run;
  return await readOwnerBalance({ caches: evm.ownerCaches, reader: evm.chain, chain, owner }, fresh, (err) =>
    ctx.log.debug({ chain, owner, err: { message: String(err) } }, 'balance refresh failed'),
  );
}

/** Receipts are looked up at most this often per (chain, owner) in one process, but for a choice found short. */
const LEARN_EVERY_MS = 1_000;
/** Receipts read per look at most. */
const RECEIPTS_PER_LOOK = 50;

/**
 * Looks up the receipts of this owner's accepted transfers, so the next reservation at a block
 * past them drops them (their payment is in the balance then); until then they only count as
 * reserved. In the background after a choice, at most every LEARN_EVERY_MS; `now` for a choice
 * found short, which waits for it whenever the last look was. How many it found mined.
 */
async function learnMined(run: EvmRun, owner: string, balances: OwnerBalances, now = false): Promise<number> {
  const { ctx, evm, chain } = run;
  const { lastLearned } = evm.ownerCaches;
  const key = `${chain}|${owner}`;
  const last = lastLearned.get(key) ?? 0;
  if (!now && Date.now() - last < LEARN_EVERY_MS) return 0;
  lastLearned.set(key, Date.now());
  try {
    const pending = await balances.pending(chain, owner);
    const mined = await minedBlocks(evm.chain, chain, pending, RECEIPTS_PER_LOOK);
    const hashOf = new Map(pending.map((e) => [e.holder, e.txHash as string]));
    const txs = [...mined].map(([holder, block]) => ({
      holder,
      txHash: hashOf.get(holder) as string,
      block,
    }));
    await balances.noteMined(chain, owner, txs);
    return txs.length;
  } catch (err) {
    ctx.log.debug(
      { chain, owner, err: { message: String(err) } },
      'could not read receipts of accepted transfers',
    );
    return 0;
  }
}
