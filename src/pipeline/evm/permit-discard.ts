import type { PermitPayload } from '../../domain/permit.ts';
import type { ReplicaAckSetting, WriteSite } from '../../store/replica-acks.ts';
import { current, jittered, Later } from '../context.ts';
import type { EvmRun } from './owner-turn.ts';

/*
 * docs/replicated-redis.md: a saved permit is never taken for unsent while the record may have lost
 * the mark of the send that paid it and the chain shows its nonce used. Only a failover loses an
 * acknowledged write (the worker refuses a Redis that can lose them otherwise), so the record is
 * authoritative while the primary is still the one the permit was saved unsent on (its replication
 * id, which a failover, a restart or a restore changes) and Redis acknowledges every replica it has
 * had: a permit with no sending mark was then never sent, whatever the chain shows (an outside
 * signer took its nonce: promise 4, a fresh permit). Elsewhere — a failover since, a site unknown,
 * fewer acknowledgements asked than replicas — the chain is asked before the permit is thrown away.
 */

/** May the saved permit be discarded as one that never moved money, and if not, what was read. */
export type DiscardVerdict =
  { readonly discard: true } | { readonly discard: false; readonly evidence: string };

/** What decides whether the record itself can say that a saved permit was never sent. */
export type RecordFacts = {
  /** Where the permit was saved unsent (SavedSteps.unsentSite); null when not known. */
  readonly savedOn: string | null;
  /** The primary now; undefined when it cannot be read (no replica acknowledgements wired). */
  readonly now: WriteSite | undefined;
  readonly setting: ReplicaAckSetting;
};

/**
 * Whether a sending mark written after the permit was saved may be gone: the primary changed since
 * (or either side is unknown), or Redis is asked to acknowledge fewer replicas than it has had.
 */
export function recordMayHaveLostMark(facts: RecordFacts): boolean {
  const { savedOn, now, setting } = facts;
  if (savedOn === null || now === undefined || now.primary === '') return true;
  if (now.primary !== savedOn) return true;
  return setting !== 'auto' && setting < now.replicas;
}

/** Where a permit saved now lands, as far as this process knows (ReplicaAcks.lastSite). */
export function unsentSiteNow(run: Pick<EvmRun, 'ctx'>): string | null {
  const primary = run.ctx.deps.acks?.lastSite()?.primary;
  return primary ? primary : null;
}

/**
 * The verdict on a saved permit about to be replaced by one with another nonce. Discarded at once
 * when its first send was refused, or when the record is authoritative (recordMayHaveLostMark says
 * no); otherwise `nonces(owner)` is read at the chain's head: the permit may be discarded while the
 * chain has not used its nonce, or when the records show that another payload used it (the nonce
 * pool's `used` set, written only after such an acceptance). A chain without RPC says nothing: the
 * record alone decides. A failed read waits (the run comes back to ask again).
 */
export async function mayDiscardPermit(run: EvmRun, permit: PermitPayload): Promise<DiscardVerdict> {
  const { ctx, evm, chain } = run;
  const nonce = BigInt(permit.nonce);
  const { steps } = current(ctx);
  if (steps.refusal?.nonce === nonce) return { discard: true };
  if (!(await mayHaveLostMark(run, steps.unsentSite))) return { discard: true };
  let reading;
  try {
    reading = await evm.chain.permitNonceAtHead(chain, permit.owner);
  } catch (err) {
    throw new Later(
      jittered(ctx, 2_000),
      `cannot read ${chain} nonces(owner) before replacing a saved permit: ${(err as Error).message.slice(0, 120)}`,
      'nonce_chain',
    );
  }
  if (reading === undefined || reading.nonce <= nonce) return { discard: true };
  const by = await evm.nonces.usedBy(chain, permit.owner, nonce);
  if (by !== undefined && by !== `${ctx.batchId}/${ctx.transferId}`) return { discard: true };
  return {
    discard: false,
    evidence:
      `the saved permit with nonce ${nonce} was about to be replaced, but ${chain} nonces(owner) is ` +
      `${reading.nonce} at block ${reading.block.number}: its nonce is used, nothing recorded shows ` +
      `that another payload used it, and ${lostMarkReason(steps.unsentSite)}, so this permit may have paid`,
  };
}

/** Reads the primary now (one read-only script) when the permit's site is known. */
async function mayHaveLostMark(run: EvmRun, savedOn: string | null): Promise<boolean> {
  const acks = run.ctx.deps.acks;
  if (savedOn === null || !acks) return true;
  let now: WriteSite;
  try {
    now = await acks.site();
  } catch (err) {
    throw new Later(
      jittered(run.ctx, 1_000),
      `cannot read the Redis primary before replacing a saved permit: ${(err as Error).message.slice(0, 120)}`,
      'replicas',
    );
  }
  return recordMayHaveLostMark({ savedOn, now, setting: acks.setting });
}

function lostMarkReason(savedOn: string | null): string {
  return savedOn === null
    ? 'where it was saved is not known'
    : `Redis may have lost its sending mark (the primary it was saved on, ${savedOn.slice(0, 12)}…, is not the one now, or fewer replicas are acknowledged than it has)`;
}
