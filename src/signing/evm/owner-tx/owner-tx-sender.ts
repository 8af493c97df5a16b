import type { Redis } from 'ioredis';
import { keccak256, type Hex } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Config } from '../../../config/config.ts';
import { USDC_EVM, type EvmChain } from '../../../domain/chains.ts';
import type { Logger } from '../../../log/logger.ts';
import {
  assignNonce,
  callDataDigest,
  giveUpCall,
  markDone,
  markSent,
  markUsedSeen,
  nextNonce,
  nonceOfCall,
  readOwnerTx,
  saveSigned,
  saveSignedCall,
  savedSignedOf,
  type MinedOwnerTx,
  type OwnerCallFields,
  type OwnerTxRecord,
  type SavedOwnerTx,
  type SavedSigned,
  type Where,
} from '../../../store/owner-txs.ts';
import type { ReplicaAcks } from '../../../store/replica-acks.ts';
import { ChainReadError, SigningError, SIGNING_ERROR_CODES } from '../../errors.ts';
import {
  broadcast,
  checkChainId,
  createOwnerChain,
  estimateGas,
  readBalance,
  readFees,
  readHead,
  readNonce,
  readNonceAt,
  readFinalized,
  readOwnerTxInBlock,
  readReceipt,
  type OwnerChain,
} from './owner-chain.ts';
import {
  decideByReceipt,
  decideOwnerTx,
  type Fees,
  type NonceHolder,
  type TxDecision,
  type TxFacts,
} from './tx-decision.ts';

/*
 * A treasury owner's own transactions (docs/cctp.md "The owner's transactions"), one step at a time:
 * each `step` of a call gives it its account nonce (once), or looks at where its transaction stands
 * and does the one thing tx-decision.ts says — sign it, save it (held by the replicas) and only then
 * broadcast it; send it again identically; re-price it at its nonce; fill the nonce of a call given
 * up with a zero-value self-transaction; or report it mined, replaced by another, or waiting (the
 * gas cap, the owner's gas, the replicas) — or, a used nonce's holder unreadable for long,
 * OwnerTxUnprovenError. The flow that calls it (the CCTP road) loops on `step`
 * until `mined` or `replaced-by-other`, as blocks come.
 */

/** A call an owner makes; `id` names it for ever (it gets one nonce, and only ever that one). */
export type OwnerCall = {
  readonly id: string;
  readonly to: string;
  readonly data: string;
  readonly value?: bigint;
  /** The gas limit; estimated (eth_estimateGas, +20%) when not given. */
  readonly gas?: bigint;
};

/** Why a step sends nothing now. */
export type OwnerTxWait = 'pending' | 'gas-cap' | 'owner-lacks-gas' | 'replicas';

/** Where one call's transaction stands after a step. */
export type OwnerTxStep =
  | {
      readonly kind: 'sent';
      readonly nonce: bigint;
      readonly hash: string;
      readonly version: number;
      /** `first` its first broadcast, `again` the same bytes again, `repriced` a new version. */
      readonly how: 'first' | 'again' | 'repriced';
    }
  | {
      readonly kind: 'waiting';
      readonly reason: OwnerTxWait;
      /** The words an operator reads. */
      readonly detail: string;
      /** Undefined when the call has no nonce yet (nothing is signed before its owner can pay). */
      readonly nonce: bigint | undefined;
      readonly hash: string | undefined;
    }
  | {
      readonly kind: 'mined';
      readonly nonce: bigint;
      readonly hash: string;
      readonly success: boolean;
      /** The zero-value self-transaction that filled a call given up was mined, not the call. */
      readonly filler: boolean;
    }
  | {
      readonly kind: 'replaced-by-other';
      readonly nonce: bigint;
      /**
       * The evidence: the owner's nonce on chain, our versions (none of them mined), and the mined
       * transaction that holds the nonce, found in its block.
       */
      readonly chainNonce: bigint;
      readonly hashes: readonly string[];
      readonly holder: NonceHolder;
    };

export type OwnerTxSenderDeps = {
  readonly redis: Redis;
  /** `QUEUE_PREFIX`. */
  readonly prefix: string;
  /** Replica acknowledgements: a signed transaction is held by them before it is broadcast. */
  readonly acks?: ReplicaAcks | undefined;
  readonly config: Pick<Config, 'network' | 'evmRpcUrl' | 'maxGasWei' | 'evmPrivateKeys'>;
  /** Blocks a broadcast transaction may stay unmined before it is re-priced (or sent again); default 3. */
  readonly repriceAfterBlocks?: number;
  /**
   * How long (ms) a call's nonce may stay used with neither a receipt of its versions nor the
   * transaction holding it readable before the step says its fate cannot be known; default 1 hour.
   */
  readonly unprovenAfterMs?: number;
  /** viem's polling interval (ms); default 1 s. */
  readonly pollingIntervalMs?: number;
  /** Per RPC call; default 10 s. */
  readonly rpcTimeoutMs?: number;
  readonly logger?: Logger | undefined;
};

export const DEFAULT_REPRICE_AFTER_BLOCKS = 3;
export const DEFAULT_UNPROVEN_AFTER_MS = 3_600_000;
/** The gas of a zero-value transfer to oneself. */
const FILL_GAS = 21_000n;

/** Everything the top-level functions below share. */
type Sender = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly acks: ReplicaAcks | undefined;
  readonly config: OwnerTxSenderDeps['config'];
  readonly accounts: ReadonlyMap<string, PrivateKeyAccount>;
  readonly chains: Map<EvmChain, OwnerChain>;
  readonly repriceAfterBlocks: number;
  readonly unprovenAfterMs: number;
  readonly pollingIntervalMs: number;
  readonly rpcTimeoutMs: number;
  readonly logger: Logger | undefined;
  /** Per (chain, owner): the highest nonce this process noted mined, and when (`performance.now()`). */
  readonly seenMined: Map<string, SeenMined>;
};

/** A transaction this process saw mined: its nonce, and when it noted it (`performance.now()`). */
export type SeenMined = { readonly nonce: bigint; readonly at: number };

/** The owner's calls given a nonce and not mined, and the chain's nonce they were read against. */
export type UnminedCalls = {
  readonly calls: readonly OwnerTxRecord[];
  /** The owner's nonce on chain (`latest`) as read; undefined where no call was ever given a nonce. */
  readonly chainNonce: bigint | undefined;
};

const seenKey = (w: Where): string => `${w.chain}:${w.owner.toLowerCase()}`;

/** One call of one owner on one chain, as a step works on it. */
type At = {
  readonly s: Sender;
  readonly w: Where;
  readonly oc: OwnerChain;
  readonly account: PrivateKeyAccount;
};

function ownerChain(s: Sender, chain: EvmChain): OwnerChain {
  const known = s.chains.get(chain);
  if (known) return known;
  const url = s.config.evmRpcUrl[chain];
  if (url === undefined) {
    throw new SigningError(
      SIGNING_ERROR_CODES.rpcFailed,
      `EVM_RPC_URL_${chain} is not set: the owner's transactions on ${chain} cannot be sent`,
    );
  }
  const oc = createOwnerChain(chain, USDC_EVM[s.config.network][chain].chainId, url, {
    pollingIntervalMs: s.pollingIntervalMs,
    timeoutMs: s.rpcTimeoutMs,
  });
  s.chains.set(chain, oc);
  return oc;
}

async function atOf(s: Sender, chain: EvmChain, owner: string): Promise<At> {
  const account = s.accounts.get(owner.toLowerCase());
  if (!account) {
    throw new SigningError(SIGNING_ERROR_CODES.evmKeyMissing, `no key of the owner ${owner} is configured`);
  }
  const oc = ownerChain(s, chain);
  await checkChainId(oc);
  return { s, oc, account, w: { prefix: s.prefix, chain, owner: account.address } };
}

function waiting(reason: OwnerTxWait, detail: string, saved?: OwnerTxRecord): OwnerTxStep {
  return { kind: 'waiting', reason, detail, nonce: saved?.nonce, hash: saved?.versions.at(-1)?.hash };
}

const gwei = (wei: bigint): string => {
  const whole = wei / 1_000_000_000n;
  const frac = (wei % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return frac === '' ? whole.toString() : `${whole}.${frac}`;
};

function lacksGas(at: At, need: bigint): string {
  return `owner lacks gas: ${at.w.owner} needs ${gwei(need)} gwei more native gas on ${at.oc.chain} for its next transaction`;
}

/** The words of a wait the decision makes. */
function waitDetail(at: At, d: Extract<TxDecision, { kind: 'wait' }>): string {
  const { chain } = at.oc;
  if (d.reason === 'gas-cap') {
    const cap = at.s.config.maxGasWei[chain] ?? 0n;
    return `the gas price asked (${gwei(d.need ?? 0n)} gwei) is above MAX_GAS_GWEI_${chain} (${gwei(cap)} gwei): waiting for it to fall`;
  }
  if (d.reason === 'owner-lacks-gas') return lacksGas(at, d.need ?? 0n);
  return 'broadcast, not mined yet';
}

/** What a look found (lookAt): the owner's nonce at `latest`, and a receipt of the versions. */
type NonceSeen = Pick<TxFacts, 'chainNonce' | 'receipt'>;

/**
 * A look at a saved transaction. A receipt of its versions is read first: one decides alone (on a
 * chain with short blocks the first look after a send finds it, in one round). Without one, the
 * owner's nonce, and the receipts again only when the nonce is used (the nonce before the receipts,
 * tx-decision.ts: a receipt missing before the nonce read says nothing of a nonce used since); a
 * nonce not used needs no second read, the transaction is not mined. With the receipt, `chainNonce`
 * is the one it proves used (nothing reads it past the receipt: decideByReceipt).
 */
async function lookAt(at: At, saved: SavedOwnerTx): Promise<NonceSeen> {
  const hashes = saved.versions.map((v) => v.hash);
  const early = hashes.length > 0 ? await readReceipt(at.oc, hashes) : undefined;
  if (early) return { chainNonce: saved.nonce + 1n, receipt: early };
  const chainNonce = await readNonce(at.oc, at.w.owner, 'latest');
  if (chainNonce <= saved.nonce || hashes.length === 0) return { chainNonce, receipt: undefined };
  return { chainNonce, receipt: await readReceipt(at.oc, hashes) };
}

/**
 * The facts the decision needs: the look (`seen`, or a look now: stepSaved looks first and passes
 * it, so that a receipt decides alone; nonceFor's probe, with nothing signed, has it read here) and
 * the head, fees and balance, read at once.
 */
async function gatherFacts(at: At, saved: SavedOwnerTx, seen?: NonceSeen): Promise<TxFacts> {
  const { oc, w, s } = at;
  const [{ chainNonce, receipt }, head, fees, balance] = await Promise.all([
    seen ?? lookAt(at, saved),
    readHead(oc),
    readFees(oc),
    readBalance(oc, w.owner),
  ]);
  const filled = saved.filled;
  const latest = saved.versions.at(-1);
  return {
    nonce: saved.nonce,
    versions: saved.versions.map((v) => ({ hash: v.hash, fees: { maxFee: v.maxFee, tip: v.tip } })),
    abandoned: filled,
    sentAtBlock: latest && saved.sent?.version === latest.version ? saved.sent.block : undefined,
    chainNonce,
    receipt,
    head,
    baseFee: fees.baseFee,
    suggested: fees.suggested,
    cap: s.config.maxGasWei[oc.chain],
    balance,
    gas: filled ? FILL_GAS : saved.gas,
    value: filled ? 0n : saved.value,
    repriceAfterBlocks: s.repriceAfterBlocks,
    nonceHolder: undefined,
    usedSeenAtMs: saved.usedSeenAtMs,
    now: Date.now(),
    unprovenAfterMs: s.unprovenAfterMs,
  };
}

/** The call's transaction, signed at `fees` (the zero-value self-transaction for a filled nonce). */
async function signAt(
  at: At,
  saved: SavedOwnerTx,
  fill: boolean,
  fees: Fees,
): Promise<{ raw: Hex; hash: Hex }> {
  const raw = await at.account.signTransaction({
    type: 'eip1559',
    chainId: at.oc.chainId,
    nonce: Number(saved.nonce),
    to: (fill ? at.account.address : saved.to) as Hex,
    data: (fill ? '0x' : saved.data) as Hex,
    value: fill ? 0n : saved.value,
    gas: fill ? FILL_GAS : saved.gas,
    maxFeePerGas: fees.maxFee,
    maxPriorityFeePerGas: fees.tip,
  });
  return { raw, hash: keccak256(raw) };
}

/**
 * Saves a signed version; with replicas, through a round that holds it on them before it returns
 * (replica-acks.ts). A verdict short of the replicas: not saved as far as sending goes.
 */
async function saveVersion(
  at: At,
  v: Parameters<typeof saveSigned>[2],
): Promise<SavedSigned | { kind: 'replicas'; reason: string }> {
  const { s, w } = at;
  if (!s.acks) return await saveSigned(s.redis, w, v);
  const { reply, verdict } = await s.acks.writeAcked(
    (known) => saveSignedCall(w, v, known),
    (r) => {
      const saved = savedSignedOf(r);
      return saved.kind === 'saved' ? saved.site : undefined;
    },
  );
  const saved = savedSignedOf(reply);
  if (saved.kind === 'saved' && !verdict.ok) return { kind: 'replicas', reason: verdict.reason };
  if (saved.kind === 'unknown')
    return { kind: 'replicas', reason: verdict.ok ? 'no answer' : verdict.reason };
  return saved;
}

/** Broadcasts the latest saved version and records it sent at `head`. */
async function send(at: At, saved: SavedOwnerTx, head: bigint, how: 'first' | 'again' | 'repriced') {
  const latest = saved.versions.at(-1);
  if (!latest) throw new Error('nothing signed to send');
  const r = await broadcast(at.oc, latest.raw);
  const { chain } = at.oc;
  at.s.logger?.debug(
    { chain, owner: at.w.owner, nonce: saved.nonce.toString(), hash: latest.hash, how, answer: r.kind },
    'owner transaction broadcast',
  );
  if (r.kind === 'lacks-gas')
    return waiting(
      'owner-lacks-gas',
      `owner lacks gas: the ${chain} node refused ${latest.hash} for ${at.w.owner}'s balance`,
      saved,
    );
  if (r.kind === 'unknown') {
    // It may have gone out: it is not marked sent, so the next step sends the same bytes again.
    at.s.logger?.warn(
      { chain, owner: at.w.owner, hash: latest.hash, answer: r.message },
      'owner transaction broadcast unanswered',
    );
    return waiting(
      'pending',
      `the ${chain} node did not answer the broadcast of ${latest.hash}: sending it again next`,
      saved,
    );
  }
  await markSent(at.s.redis, at.w, saved.nonce, latest.version, head);
  const step: OwnerTxStep = {
    kind: 'sent',
    nonce: saved.nonce,
    hash: latest.hash,
    version: latest.version,
    how,
  };
  return step;
}

/**
 * The transaction at `nonce` as saved, read again and held by the replicas, before a version saved
 * earlier (by a run that may have crashed before its broadcast, or by another sender) is sent: the
 * site is read before the record, so a failover in between (a record the new primary may not have)
 * shows as a shortfall, never as a send. A string: why it is not held.
 */
async function heldSaved(at: At, nonce: bigint): Promise<OwnerTxRecord | string> {
  const { acks } = at.s;
  const site = acks ? await acks.site() : undefined;
  const saved = await readSaved(at, nonce);
  if (!acks || !site) return saved;
  const verdict = await acks.confirm(site);
  return verdict.ok ? saved : verdict.reason;
}

/**
 * Signs at `fees`, saves (held by the replicas), then broadcasts. `lost`: another sender saved a
 * version at this nonce first, and this one is thrown away unsent.
 */
async function signSaveSend(
  at: At,
  saved: SavedOwnerTx,
  fill: boolean,
  fees: Fees,
  head: bigint,
): Promise<OwnerTxStep | 'lost'> {
  const { raw, hash } = await signAt(at, saved, fill, fees);
  const version = saved.versions.length + 1;
  const kind = fill ? 'fill' : 'call';
  const v = { nonce: saved.nonce, version, kind, raw, hash, maxFee: fees.maxFee, tip: fees.tip } as const;
  const r = await saveVersion(at, v);
  if (r.kind === 'replicas')
    return waiting('replicas', `waiting for Redis replicas before sending: ${r.reason}`, saved);
  if (r.kind !== 'saved') return 'lost';
  const mine = { ...saved, filled: saved.filled || fill, versions: [...saved.versions, v] };
  return await send(at, mine, head, version === 1 ? 'first' : 'repriced');
}

/**
 * After a lost race to save: the winner's latest version is sent as it is (it was saved, so it may
 * be out already). A fill that lost to a signed call cannot give the call up.
 */
async function afterLostRace(at: At, nonce: bigint, fill: boolean, head: bigint): Promise<OwnerTxStep> {
  const now = await heldSaved(at, nonce);
  if (typeof now === 'string')
    return waiting('replicas', `waiting for Redis replicas before sending: ${now}`);
  if (fill && !now.filled) throw signedError(at, now);
  // Noted mined meanwhile (its save was refused: owner-tx-save-signed.lua): nothing to send.
  if (now.done) return minedOf(now);
  return await send(at, now, head, 'again');
}

function signedError(at: At, saved: OwnerTxRecord): OwnerTxSignedError {
  return new OwnerTxSignedError(
    SIGNING_ERROR_CODES.ownerTxSigned,
    `the call ${saved.callId} is signed at nonce ${saved.nonce} of ${at.w.owner} on ${at.oc.chain}: it can only be sent, never given up`,
  );
}

/** How far below the head the search for a nonce's holder reaches, at most (blocks). */
const HOLDER_SEARCH_MAX_SPAN = 1n << 22n;

/** Whether the owner's nonce in the state of `block` counts past `nonce` (block -1: before genesis). */
async function usedAt(at: At, nonce: bigint, block: bigint): Promise<boolean> {
  if (block < 0n) return false;
  return (await readNonceAt(at.oc, at.w.owner, block)) > nonce;
}

/**
 * The lowest block whose state counts past `nonce`, searched below `head` (where it does): a lower
 * bound below the latest broadcast (or 64 blocks below the head), widened fourfold while it is used
 * too (down to before genesis, at most HOLDER_SEARCH_MAX_SPAN below the head), then halved. A
 * string: why it cannot be found (the head read not counting past the nonce: read from another node).
 */
async function firstUsedBlock(at: At, saved: SavedOwnerTx, head: bigint): Promise<bigint | string> {
  const { nonce } = saved;
  if (!(await usedAt(at, nonce, head)))
    return `the owner's nonce in the state of block ${head} (the head read) does not count past ${nonce} yet`;
  let hi = head;
  let span = saved.sent && saved.sent.block < head ? head - saved.sent.block + 1n : 64n;
  let lo = hi - span;
  while (await usedAt(at, nonce, lo)) {
    hi = lo;
    span *= 4n;
    if (span > HOLDER_SEARCH_MAX_SPAN)
      return `the nonce is used in every block searched, down to ${hi} (${HOLDER_SEARCH_MAX_SPAN} blocks below the head)`;
    lo = hi - span < -1n ? -1n : hi - span;
  }
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    if (await usedAt(at, nonce, mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The mined transaction that holds the call's nonce (docs/cctp.md "The owner's transactions"): the
 * first block whose state counts past it, and the owner's transaction at that nonce in it. Anything
 * unreadable (a block or a state not served by a node behind, pruned state, an RPC error) is
 * `unknown`, with why: the decision never judges on missing data.
 */
async function findNonceHolder(
  at: At,
  saved: SavedOwnerTx,
  head: bigint,
): Promise<NonceHolder | { readonly unknown: string }> {
  try {
    const block = await firstUsedBlock(at, saved, head);
    if (typeof block === 'string') return { unknown: block };
    const hash = await readOwnerTxInBlock(at.oc, block, at.w.owner, saved.nonce);
    if (hash === undefined)
      return { unknown: `block ${block} was served without the owner's transaction at nonce ${saved.nonce}` };
    return { hash, block, finalized: await readFinalized(at.oc) };
  } catch (err) {
    if (err instanceof ChainReadError) return { unknown: err.message };
    throw err;
  }
}

/** The facts, with the nonce's holder looked up when the nonce is used and no receipt of ours is seen. */
async function factsWithHolder(
  at: At,
  saved: SavedOwnerTx,
  seen: NonceSeen,
): Promise<{ facts: TxFacts; unknown: string | undefined }> {
  const facts = await gatherFacts(at, saved, seen);
  if (facts.receipt || facts.chainNonce <= saved.nonce) return { facts, unknown: undefined };
  const found = await findNonceHolder(at, saved, facts.head);
  if ('unknown' in found) return { facts: { ...facts, nonceHolder: 'unknown' }, unknown: found.unknown };
  return { facts: { ...facts, nonceHolder: found }, unknown: undefined };
}

/** A call whose nonce stayed used, its holder unreadable, for `unprovenAfterMs`: an operator looks. */
export class OwnerTxUnprovenError extends SigningError {
  override name = 'OwnerTxUnprovenError';
}

function unprovenError(
  at: At,
  saved: SavedOwnerTx,
  facts: TxFacts,
  why: string | undefined,
): OwnerTxUnprovenError {
  const since = saved.usedSeenAtMs === undefined ? '?' : new Date(saved.usedSeenAtMs).toISOString();
  return new OwnerTxUnprovenError(
    SIGNING_ERROR_CODES.ownerTxUnproven,
    `nonce ${saved.nonce} of ${at.w.owner} on ${at.oc.chain} is used (chain nonce ${facts.chainNonce}) since ${since} (head ${saved.usedSeenAt ?? '?'}; now ${facts.head}), no receipt of the call's versions (${saved.versions.map((v) => v.hash).join(', ') || 'none signed'}) is served, and the transaction holding the nonce cannot be read: ${why ?? 'unknown'}`,
  );
}

/** The call mined (a receipt of one of its versions): noted done; `filler` when it was given up. */
async function minedStep(
  at: At,
  saved: SavedOwnerTx,
  d: Extract<TxDecision, { kind: 'mined' }>,
): Promise<OwnerTxStep> {
  await markDone(at.s.redis, at.w, saved, d);
  noteSeenMined(at, saved.nonce);
  return { kind: 'mined', nonce: saved.nonce, hash: d.hash, success: d.success, filler: saved.filled };
}

/** Keeps the highest nonce of the owner this process saw mined, with the moment it noted it. */
function noteSeenMined(at: At, nonce: bigint): void {
  const key = seenKey(at.w);
  const had = at.s.seenMined.get(key);
  if (had === undefined || had.nonce <= nonce) at.s.seenMined.set(key, { nonce, at: performance.now() });
}

/** What a step of a transaction noted mined says: mined, as noted. */
export function minedOf(saved: MinedOwnerTx): OwnerTxStep {
  const { nonce, done } = saved;
  return { kind: 'mined', nonce, hash: done.hash, success: done.success, filler: saved.filled };
}

/** Does what the decision says about the saved transaction. */
async function act(
  at: At,
  saved: SavedOwnerTx,
  { facts, unknown }: { facts: TxFacts; unknown: string | undefined },
  d: TxDecision,
): Promise<OwnerTxStep> {
  switch (d.kind) {
    case 'mined':
      return await minedStep(at, saved, d);
    case 'nonce-used':
      if (saved.usedSeenAt === undefined)
        await markUsedSeen(at.s.redis, at.w, saved.nonce, { head: facts.head, atMs: facts.now });
      return waiting(
        'pending',
        `nonce ${saved.nonce} of ${at.w.owner} is used on ${at.oc.chain}, no receipt of this call is seen and the transaction holding the nonce cannot be read yet (${unknown ?? 'not looked up'}): looked at again`,
        saved,
      );
    case 'holder-not-final':
      return waiting(
        'pending',
        `nonce ${saved.nonce} of ${at.w.owner} on ${at.oc.chain} is held by another transaction, ${d.holder.hash} in block ${d.holder.block}, not final yet (finalized: block ${d.holder.finalized}): a reorg could still drop it, so nothing else is signed until it is final`,
        saved,
      );
    case 'ours-unreceipted':
      return waiting(
        'pending',
        `nonce ${saved.nonce} of ${at.w.owner} on ${at.oc.chain} is held by this call's ${d.holder.hash}, mined in block ${d.holder.block}; its receipt is not served yet: waiting for it`,
        saved,
      );
    case 'unproven':
      throw unprovenError(at, saved, facts, unknown);
    case 'replaced-by-other':
      return {
        kind: 'replaced-by-other',
        nonce: saved.nonce,
        chainNonce: facts.chainNonce,
        hashes: saved.versions.map((v) => v.hash),
        holder: d.holder,
      };
    case 'wait':
      return waiting(d.reason, waitDetail(at, d), saved);
    case 'rebroadcast': {
      const held = await heldSaved(at, saved.nonce);
      if (typeof held === 'string')
        return waiting('replicas', `waiting for Redis replicas before sending: ${held}`, saved);
      if (held.done) return minedOf(held);
      // Another sender saved a newer version meanwhile: the next step looks at that one.
      if (held.versions.at(-1)?.hash !== saved.versions.at(-1)?.hash)
        return waiting('pending', 'a newer version was saved', held);
      return await send(at, held, facts.head, saved.sent ? 'again' : 'first');
    }
    case 'sign':
    case 'fill-gap':
    case 'reprice': {
      const fill = d.kind === 'fill-gap' || (d.kind === 'reprice' && facts.abandoned);
      const step = await signSaveSend(at, saved, fill, d.fees, facts.head);
      return step === 'lost' ? await afterLostRace(at, saved.nonce, fill, facts.head) : step;
    }
  }
}

/**
 * The call's nonce: the one it has, or (the owner able to pay for it) a new one, given on the facts
 * `probed` (the first step of its transaction reuses their fees and balance: freshFacts).
 */
async function nonceFor(
  at: At,
  call: OwnerCall,
): Promise<{ readonly nonce: bigint; readonly probed?: TxFacts } | OwnerTxStep> {
  const { s, w, oc } = at;
  const had = await nonceOfCall(s.redis, w, call.id);
  if (had !== undefined) return { nonce: had };
  const value = call.value ?? 0n;
  // A node refuses to estimate a call whose value the owner cannot send: that is a wait, not an error.
  if (value > 0n && call.gas === undefined) {
    const balance = await readBalance(oc, w.owner);
    if (balance < value) return waiting('owner-lacks-gas', lacksGas(at, value - balance));
  }
  const gas = call.gas ?? (await estimateGas(oc, w.owner, { to: call.to, data: call.data, value }));
  const fields: OwnerCallFields = { to: call.to, data: call.data, value, gas };
  // Nothing is given a nonce before its owner can pay for it: a nonce given is a nonce to fill. The
  // pending nonce is read beside the facts, in one round (nothing is signed: gatherFacts).
  const [pending, read] = await Promise.all([
    readNonce(oc, w.owner, 'pending'),
    gatherFacts(at, probe(0n, fields)),
  ]);
  const facts = { ...read, nonce: pending };
  const d = decideOwnerTx(facts);
  if (d.kind === 'wait') return waiting(d.reason, waitDetail(at, d));
  const r = await assignNonce(s.redis, w, call.id, pending, fields);
  if (r.kind === 'read-chain') throw new Error('owner-tx-assign.lua asked for the chain nonce it was given');
  if (r.fresh)
    s.logger?.debug(
      { chain: oc.chain, owner: w.owner, call: call.id, nonce: r.nonce.toString() },
      'owner transaction nonce given',
    );
  return { nonce: r.nonce, ...(r.fresh ? { probed: facts } : {}) };
}

/**
 * The first step of a transaction whose nonce this step just gave, nothing of it signed: the owner's
 * nonce and the head are read again (the nonce may have been used meanwhile), the fees and the
 * balance are those the nonce was given on, a Redis write earlier. Undefined — the full look — where
 * the saved transaction is not that one (another nonce than the one probed; anything signed, sent,
 * given up or done) or the nonce is used now.
 */
async function freshFacts(
  at: At,
  saved: SavedOwnerTx,
  probed: TxFacts | undefined,
): Promise<TxFacts | undefined> {
  if (!probed || probed.nonce !== saved.nonce) return undefined;
  if (saved.versions.length > 0 || saved.sent || saved.filled || saved.done) return undefined;
  const [chainNonce, head] = await Promise.all([readNonce(at.oc, at.w.owner, 'latest'), readHead(at.oc)]);
  if (chainNonce > saved.nonce) return undefined;
  return { ...probed, chainNonce, head, now: Date.now() };
}

/** A transaction not saved yet, for the decision before a nonce is given. */
function probe(nonce: bigint, fields: OwnerCallFields): SavedOwnerTx {
  return {
    ...fields,
    nonce,
    callId: '',
    versions: [],
    sent: undefined,
    filled: false,
    done: undefined,
    usedSeenAt: undefined,
    usedSeenAtMs: undefined,
  };
}

function missingError(at: At, nonce: bigint): SigningError {
  return new SigningError(
    SIGNING_ERROR_CODES.ownerTxMissing,
    `owner transaction ${at.oc.chain}/${at.w.owner}/${nonce} is missing from Redis: nothing is sent for it`,
  );
}

async function readSaved(at: At, nonce: bigint): Promise<OwnerTxRecord> {
  const saved = await readOwnerTx(at.s.redis, at.w, nonce);
  if (!saved) throw missingError(at, nonce);
  return saved;
}

/**
 * A call id names one call for ever: asked again with another target, calldata or value, it is
 * refused rather than sent as what was saved under it.
 */
function checkSameCall(at: At, saved: OwnerTxRecord, call: OwnerCall): void {
  const sameData = saved.done
    ? saved.dataDigest === callDataDigest(call.data)
    : saved.data.toLowerCase() === call.data.toLowerCase();
  const same =
    saved.to.toLowerCase() === call.to.toLowerCase() && sameData && saved.value === (call.value ?? 0n);
  if (!same) {
    throw new SigningError(
      SIGNING_ERROR_CODES.ownerTxMissing,
      `the call ${call.id} of ${at.w.owner} on ${at.oc.chain} was saved as another call (nonce ${saved.nonce}): nothing is sent`,
    );
  }
}

/**
 * One step of the saved transaction: where it stands, and the one thing to do about it. A receipt
 * decides alone: the head, fees and balance are read only when there is none. `probed`: the facts
 * its nonce was just given on (freshFacts).
 */
async function stepSaved(at: At, saved: OwnerTxRecord, probed?: TxFacts): Promise<OwnerTxStep> {
  if (saved.done) return minedOf(saved);
  const fresh = await freshFacts(at, saved, probed);
  if (fresh) return await act(at, saved, { facts: fresh, unknown: undefined }, decideOwnerTx(fresh));
  const seen = await lookAt(at, saved);
  const mined = decideByReceipt(seen.receipt);
  if (mined) return await minedStep(at, saved, mined);
  const gathered = await factsWithHolder(at, saved, seen);
  return await act(at, saved, gathered, decideOwnerTx(gathered.facts));
}

/**
 * One step of `call` (see the top of this file). A call's nonce and its transaction's record are
 * written together (owner-tx-assign.lua), so a nonce whose record is missing was read from a primary
 * that a failover has replaced since: where the call's nonce reads otherwise now, the step begins
 * again from the promoted replica (nothing signed at the nonce the failover lost was sent: a signed
 * version is held by the replicas before its broadcast). Missing still: USDC_OWNER_TX_RECORD.
 */
async function stepCall(s: Sender, chain: EvmChain, owner: string, call: OwnerCall): Promise<OwnerTxStep> {
  const at = await atOf(s, chain, owner);
  for (let again = false; ; again = true) {
    const given = await nonceFor(at, call);
    if ('kind' in given) return given;
    const { nonce } = given;
    const saved = await readOwnerTx(s.redis, at.w, nonce);
    if (!saved) {
      if (!again && (await nonceOfCall(s.redis, at.w, call.id)) !== nonce) continue;
      throw missingError(at, nonce);
    }
    checkSameCall(at, saved, call);
    return await stepSaved(at, saved, given.probed);
  }
}

/** A call given up after it was signed: it is sent as it is (never replaced by another transaction). */
export class OwnerTxSignedError extends SigningError {
  override name = 'OwnerTxSignedError';
}

/**
 * Gives `callId` up: where it has a nonce and nothing of it is signed, the call is marked given up
 * for good (it is never signed after that) and its nonce filled by a zero-value transaction to the
 * owner itself: this step signs, saves and broadcasts it (or waits, as any step: the owner's gas,
 * the cap), and later steps of the call drive it until it is mined. Undefined: the call had no
 * nonce, nothing to fill. A call already signed is refused (OwnerTxSignedError): it is only ever sent.
 */
async function abandonCall(
  s: Sender,
  chain: EvmChain,
  owner: string,
  callId: string,
): Promise<OwnerTxStep | undefined> {
  const at = await atOf(s, chain, owner);
  const nonce = await nonceOfCall(s.redis, at.w, callId);
  if (nonce === undefined) return undefined;
  const r = await giveUpCall(s.redis, at.w, nonce);
  if (r.kind === 'missing') throw missingError(at, nonce);
  const saved = await readSaved(at, nonce);
  if (r.kind === 'signed') throw signedError(at, saved);
  return await stepSaved(at, saved);
}

/**
 * The owner's calls the chain has not mined yet: those given nonces from the owner's nonce at
 * `latest` up to the next the account would give, as saved, the calls given up (their nonces filled
 * by a zero-value self-transaction) aside. Each may still execute, however long its run stalls: a
 * call with a nonce is only ever driven to its fate, by whoever steps it next.
 */
async function unminedCalls(s: Sender, chain: EvmChain, owner: string): Promise<UnminedCalls> {
  const at = await atOf(s, chain, owner);
  const next = await nextNonce(s.redis, at.w);
  if (next === undefined) return { calls: [], chainNonce: undefined };
  const calls: OwnerTxRecord[] = [];
  const chainNonce = await readNonce(at.oc, at.w.owner, 'latest');
  for (let n = chainNonce; n < next; n++) {
    const saved = await readOwnerTx(s.redis, at.w, n);
    if (saved && !saved.filled) calls.push(saved);
  }
  return { calls, chainNonce };
}

/** Sends the owners' own transactions on the EVM chains (see the top of this file); wires the functions above. */
export function createOwnerTxSender(deps: OwnerTxSenderDeps) {
  const accounts = new Map<string, PrivateKeyAccount>();
  for (const key of deps.config.evmPrivateKeys) {
    const account = privateKeyToAccount(key.reveal() as Hex);
    accounts.set(account.address.toLowerCase(), account);
  }
  const s: Sender = {
    redis: deps.redis,
    prefix: deps.prefix,
    acks: deps.acks,
    config: deps.config,
    accounts,
    chains: new Map(),
    repriceAfterBlocks: deps.repriceAfterBlocks ?? DEFAULT_REPRICE_AFTER_BLOCKS,
    unprovenAfterMs: deps.unprovenAfterMs ?? DEFAULT_UNPROVEN_AFTER_MS,
    pollingIntervalMs: deps.pollingIntervalMs ?? 1_000,
    rpcTimeoutMs: deps.rpcTimeoutMs ?? 10_000,
    logger: deps.logger,
    seenMined: new Map(),
  };
  return {
    step: (chain: EvmChain, owner: string, call: OwnerCall) => stepCall(s, chain, owner, call),
    abandon: (chain: EvmChain, owner: string, callId: string) => abandonCall(s, chain, owner, callId),
    unmined: (chain: EvmChain, owner: string) => unminedCalls(s, chain, owner),
    /** The owner's transaction on the chain with the highest nonce this process saw mined, if any. */
    seenMined: (chain: EvmChain, owner: string): SeenMined | undefined =>
      s.seenMined.get(seenKey({ prefix: s.prefix, chain, owner })),
    /** The call's transaction as saved (its nonce, versions, sends), for evidence and the status. */
    async saved(chain: EvmChain, owner: string, callId: string): Promise<OwnerTxRecord | undefined> {
      const w = { prefix: s.prefix, chain, owner };
      const nonce = await nonceOfCall(s.redis, w, callId);
      return nonce === undefined ? undefined : await readOwnerTx(s.redis, w, nonce);
    },
  };
}

export type OwnerTxSender = ReturnType<typeof createOwnerTxSender>;
