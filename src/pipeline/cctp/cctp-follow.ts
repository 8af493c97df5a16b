import { cctpAddressesOf } from '../../config/cctp-settings.ts';
import type { Config } from '../../config/config.ts';
import { addressToBytes32, CCTP_DOMAIN, ZERO_BYTES32, type Hex } from '../../domain/cctp.ts';
import { attestedBurnMismatches, type CctpApiMessage } from '../../domain/cctp-answers.ts';
import { isEvmChain, type EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { ChainReadError, SigningError, SIGNING_ERROR_CODES } from '../../signing/errors.ts';
import { receiveMessageData } from '../../signing/evm/cctp-calls.ts';
import { minedOf, OwnerTxSignedError, type OwnerTxStep } from '../../signing/evm/owner-tx/owner-tx-sender.ts';
import type { CctpPatch } from '../../store/cctp-fields.ts';
import type { OwnerTxRecord } from '../../store/owner-txs.ts';
import type { TransferRecord } from '../../store/transfer-record.ts';
import type { TransferStore } from '../../store/transfer-store.ts';
import type { CctpDeps } from './cctp-deps.ts';
import { decideAfterMintStep } from './cctp-decision.ts';
import { thresholdOf } from './cctp-estimate.ts';

/*
 * After a CCTP burn is `submitted` (docs/cctp.md "The flow", steps 4–5): the intent follower calls
 * this for each `cctp:<srcDomain>:<burnTx>` intent it claims. One call is one look: the message's
 * attestation by the burn's hash (404 and `pending_confirmations`: not yet), the check that the
 * attested message is exactly the burn made, a re-attestation when it expired, then one step of the
 * mint by the same owner on the destination (its call named by the message's nonce, so two workers
 * minting one message send one transaction). `usedNonces(nonce)` set means minted, by anyone.
 * Nothing here gives up: the USDC is burned and will be minted.
 */

const MINT_GAS = 400_000n;

export type CctpFollowDeps = {
  readonly cctp: CctpDeps;
  readonly store: TransferStore;
  readonly config: Config;
  readonly logger: Logger;
};

/** What one look found: `complete` once minted (by anyone); `gone` when the record names another intent. */
export type CctpLook = 'pending' | 'complete' | 'gone';

type Followed = { readonly batchId: string; readonly transferId: string; readonly intentId: string };
/** `said` hears each step (its span's and the log's words). */
type Said = (step: 'attest' | 'mint', message: string) => void;

type Look = {
  readonly d: CctpFollowDeps;
  readonly at: Followed;
  readonly rec: TransferRecord;
  readonly from: EvmChain;
  readonly to: EvmChain;
  readonly owner: string;
  readonly burnTx: string;
  readonly said: Said;
};

export async function lookAtCctpIntent(
  d: CctpFollowDeps,
  at: Followed,
  said: Said = () => {},
): Promise<CctpLook> {
  const rec = await d.store.load(at.batchId, at.transferId);
  if (!rec || rec.intentId !== at.intentId) return 'gone';
  if (rec.cctp.mintTx !== null || rec.intentStatus === 'complete') return 'complete';
  const burnTx = at.intentId.split(':')[2];
  if (!isEvmChain(rec.from) || !isEvmChain(rec.to) || !rec.owner || !burnTx) {
    d.logger.error(
      { intentId: at.intentId },
      'a CCTP intent whose record names no EVM route or owner: not followed',
    );
    return 'gone';
  }
  const look: Look = { d, at, rec, from: rec.from, to: rec.to, owner: rec.owner, burnTx, said };
  try {
    return await lookOnce(look);
  } catch (err) {
    if (!(err instanceof ChainReadError) && !(err instanceof SigningError)) throw err;
    d.logger.warn(
      { intentId: at.intentId, err: { message: err.message } },
      'CCTP mint step failed; trying again',
    );
    return 'pending';
  }
}

async function save(look: Look, patch: CctpPatch): Promise<void> {
  await look.d.store.save(look.at.batchId, look.at.transferId, { cctp: patch });
}

async function lookOnce(look: Look): Promise<CctpLook> {
  const { d, rec, to } = look;
  const known = rec.cctp.nonce;
  if (known && (await d.cctp.reads.nonceUsed(to, known))) return await mintedByAnyone(look, known);
  const m = await attestedMessage(look);
  if (!m) return 'pending';
  if (m.nonce !== known || rec.cctp.attestation !== 'complete')
    await save(look, { nonce: m.nonce, attestation: 'complete' });
  if (await d.cctp.reads.nonceUsed(to, m.nonce)) return await mintedByAnyone(look, m.nonce);
  if (m.burn.expirationBlock > 0n && (await d.cctp.reads.head(to)) >= m.burn.expirationBlock) {
    return await reattest(look, m.nonce);
  }
  return await mintStep(look, m);
}

/** The message attested for the burn, checked to be exactly that burn; undefined: not yet. */
async function attestedMessage(
  look: Look,
): Promise<Extract<CctpApiMessage, { status: 'complete' }> | undefined> {
  const { d, at, rec, from, to } = look;
  const res = await d.cctp.api.messages(CCTP_DOMAIN[from], look.burnTx);
  if (res.kind !== 'ok') {
    const why =
      res.kind === 'not-found'
        ? 'not seen yet (404)'
        : res.kind === 'paused'
          ? `asking paused after a 429 (${Math.ceil(res.ms / 1000)} s left)`
          : res.problem;
    look.said('attest', `attestation of burn ${look.burnTx}: ${why}`);
    if (rec.cctp.attestation === null) await save(look, { attestation: 'pending' });
    return undefined;
  }
  const m = res.value.find((x) => x.status === 'complete');
  if (!m || m.status !== 'complete') {
    look.said('attest', `attestation of burn ${look.burnTx}: pending`);
    return undefined;
  }
  const src = cctpAddressesOf(d.config, from);
  const dst = cctpAddressesOf(d.config, to);
  if (rec.via === 'service' || rec.cctp.maxFee === null) return undefined;
  const wrong = attestedBurnMismatches(m, {
    sourceDomain: CCTP_DOMAIN[from],
    destinationDomain: CCTP_DOMAIN[to],
    tokenMessenger: src.tokenMessenger as Hex,
    destinationTokenMessenger: dst.tokenMessenger as Hex,
    burnToken: src.usdc as Hex,
    mintRecipient: addressToBytes32(rec.recipient),
    amount: rec.amount,
    owner: look.owner as Hex,
    destinationCaller: ZERO_BYTES32,
    maxFee: rec.cctp.maxFee,
    minFinalityThreshold: thresholdOf(rec.via),
  });
  if (wrong.length > 0) {
    d.logger.error(
      { intentId: at.intentId, fields: wrong },
      'the attested message is not the burn made: never minted as this transfer',
    );
    return undefined;
  }
  look.said('attest', `attested: nonce ${m.nonce}`);
  return m;
}

async function reattest(look: Look, nonce: string): Promise<CctpLook> {
  look.said('attest', `the attestation of nonce ${nonce} expired before its mint: asking again`);
  await save(look, { attestation: 'expired' });
  const res = await look.d.cctp.api.reattest(nonce);
  if (res.kind !== 'ok')
    look.said('attest', `reattest of ${nonce}: ${res.kind === 'unreadable' ? res.problem : res.kind}`);
  return 'pending';
}

/**
 * The message's nonce is used on the destination: minted, by anyone (receiveMessage is anyone's to
 * call: destinationCaller is zero). This transfer's own mint call, where it has one, is settled first
 * (settleMintCall): the look says `complete` once it is, the status showing that transaction where it
 * was the one that minted.
 */
async function mintedByAnyone(look: Look, nonce: string): Promise<CctpLook> {
  const id = mintCallId(nonce, look.rec.cctp.mintGen ?? 1);
  const left = await settleMintCall(look, id);
  if (left.kind === 'pending') {
    look.said(
      'mint',
      `nonce ${nonce} is used on ${look.to}: minted; this transfer's mint call ${id} first: ${left.detail}`,
    );
    return 'pending';
  }
  const ours = left.kind === 'minted' ? left.hash : undefined;
  look.said('mint', `nonce ${nonce} is used on ${look.to}: minted${ours ? ` by ${ours}` : ''}`);
  await save(look, { nonce, attestation: 'complete', ...(ours ? { mintTx: ours } : {}) });
  return 'complete';
}

/** Where a mint call this transfer leaves stands: `minted` by it, `settled` otherwise, or still `pending`. */
type LeftCall =
  | { readonly kind: 'minted'; readonly hash: string }
  | { readonly kind: 'settled' }
  | { readonly kind: 'pending'; readonly detail: string };

/**
 * Drives a mint call the transfer leaves (its message minted by anyone, or re-attested into other
 * bytes) to its fate, so that its nonce never holds the owner's later transactions on the chain: a
 * nonce given is a nonce to fill (docs/cctp.md "The owner's transactions"). A call given a nonce and
 * never signed (its run died between the two, or waited) is given up, its nonce filled by a
 * zero-value transaction to the owner itself (OwnerTxSender `abandon`); one signed is only ever sent,
 * as saved. Settled: nothing of it exists (no nonce, or its record lost in a failover), or it is mined.
 */
async function settleMintCall(look: Look, id: string): Promise<LeftCall> {
  const { d, to, owner } = look;
  const saved = await d.cctp.sender.saved(to, owner, id);
  if (!saved) return { kind: 'settled' };
  const unsigned = saved.versions.length === 0 && !saved.filled;
  const step = unsigned ? await givenUp(look, id) : await stepAsSaved(look, saved);
  if (step === undefined) return { kind: 'settled' };
  if (step.kind === 'mined')
    return step.success && !step.filler ? { kind: 'minted', hash: step.hash } : { kind: 'settled' };
  if (step.kind === 'replaced-by-other') return { kind: 'settled' };
  const detail = step.kind === 'sent' ? `sent ${step.hash}` : step.detail;
  return {
    kind: 'pending',
    detail: `${saved.versions.length === 0 ? 'given up, its nonce filled by a zero-value transaction: ' : ''}${detail}`,
  };
}

/** The call given up and its nonce's filler stepped; a call signed meanwhile (by another worker) is stepped as it is. */
async function givenUp(look: Look, id: string): Promise<OwnerTxStep | undefined> {
  const { d, to, owner } = look;
  try {
    return await d.cctp.sender.abandon(to, owner, id);
  } catch (err) {
    if (!(err instanceof OwnerTxSignedError)) throw err;
    const saved = await d.cctp.sender.saved(to, owner, id);
    return saved && (await stepAsSaved(look, saved));
  }
}

/**
 * One step of a saved call, as it was saved (its own bytes, whatever the message is attested as now);
 * one noted mined is mined.
 */
async function stepAsSaved(look: Look, saved: OwnerTxRecord): Promise<OwnerTxStep> {
  if (saved.done) return minedOf(saved);
  const call = { id: saved.callId, to: saved.to, data: saved.data, value: saved.value, gas: saved.gas };
  return await look.d.cctp.sender.step(look.to, look.owner, call);
}

const mintCallId = (nonce: string, gen: number) => `cctp-mint:${nonce}:${gen}`;

/**
 * The mint call of generation `gen` cannot mint the message as it is attested now: it is settled
 * first (settleMintCall; where it minted after all, the next look finds the nonce used), then the
 * next generation's call is made.
 */
async function nextMintCall(look: Look, id: string, gen: number): Promise<CctpLook> {
  const left = await settleMintCall(look, id);
  if (left.kind === 'pending') {
    look.said(
      'mint',
      `mint call ${id} was made for other bytes of the message; settling it first: ${left.detail}`,
    );
    return 'pending';
  }
  if (left.kind === 'settled') await save(look, { mintGen: gen + 1 });
  return 'pending';
}

/** One step of the mint; `complete` once it is mined, or the nonce is seen used. */
async function mintStep(look: Look, m: Extract<CctpApiMessage, { status: 'complete' }>): Promise<CctpLook> {
  const { d, to, owner } = look;
  const gen = look.rec.cctp.mintGen ?? 1;
  const transmitter = cctpAddressesOf(d.config, to).messageTransmitter;
  const call = {
    id: mintCallId(m.nonce, gen),
    to: transmitter,
    data: receiveMessageData(m.message, m.attestation),
    gas: MINT_GAS,
  };
  let step;
  try {
    step = await d.cctp.sender.step(to, owner, call);
  } catch (err) {
    // A re-attested message is other bytes: the call of that generation was another. It is settled
    // (it may hold a nonce), then a new one follows.
    if (!(err instanceof SigningError) || err.code !== SIGNING_ERROR_CODES.ownerTxMissing) throw err;
    return await nextMintCall(look, call.id, gen);
  }
  switch (decideAfterMintStep(step)) {
    case 'watch':
    case 'wait':
      look.said(
        'mint',
        `mint of nonce ${m.nonce} on ${to}: ${step.kind === 'waiting' ? step.detail : step.kind === 'sent' ? `sent ${step.hash}` : 'pending'}`,
      );
      return 'pending';
    case 'minted': {
      const hash = step.kind === 'mined' ? step.hash : null;
      look.said('mint', `minted on ${to}: ${hash}`);
      await save(look, { mintTx: hash, attestation: 'complete' });
      return 'complete';
    }
    case 'check_used':
      if (await d.cctp.reads.nonceUsed(to, m.nonce)) return await mintedByAnyone(look, m.nonce);
      // Our mint did not execute and nobody minted: a new mint call (the message is unchanged).
      look.said('mint', `mint call ${call.id} did not execute; a new mint call follows`);
      await save(look, { mintGen: gen + 1 });
      return 'pending';
  }
}
