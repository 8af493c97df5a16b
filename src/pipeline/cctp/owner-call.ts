import type { EvmChain } from '../../domain/chains.ts';
import { ChainReadError, SigningError, SIGNING_ERROR_CODES } from '../../signing/errors.ts';
import type { OwnerCall, OwnerTxStep, UnminedCalls } from '../../signing/evm/owner-tx/owner-tx-sender.ts';
import { Later, type Ctx } from '../context.ts';
import type { WaitKind } from '../pipeline-deps.ts';
import type { CctpDeps } from './cctp-deps.ts';

/*
 * One step of an owner's call from inside a run (docs/cctp.md "The owner's transactions"): a chain
 * that cannot be read hands the job back (the step is tried again; nothing is decided on it), and so
 * does an owner whose key this worker does not hold (a worker that holds it steps the call; the
 * flow says so before it takes the owner's lease: this is the last guard, never `needs_review`).
 */

/** How long a run watches its call before handing the job back (it comes back soon after). */
export const WATCH_MS = 60_000;
export const WATCH_EVERY_MS = 1_000;

/**
 * The looks at a sent call before the once-a-second ones: a chain with short blocks (Arbitrum's are a
 * quarter of a second, an automining one mines at once) has mined it well before a second, and the
 * owner's next call waits for this one's receipt (its lease is held until then). A chain with long
 * blocks gets three more reads of a call in all.
 */
export const FIRST_LOOKS_MS = [250, 250, 500] as const;

/** How long to wait before the look after `looks` looks at the call (0 for the first after sending). */
export function watchDelayMs(looks: number): number {
  return FIRST_LOOKS_MS[looks] ?? WATCH_EVERY_MS;
}

export async function stepOwnerCall(
  ctx: Ctx,
  cctp: CctpDeps,
  at: { readonly chain: EvmChain; readonly owner: string },
  call: OwnerCall,
): Promise<OwnerTxStep> {
  return await handedBack(() => cctp.sender.step(at.chain, at.owner, call));
}

/** The owner's calls the chain has not mined yet (OwnerTxSender `unmined`), read as a step is. */
export async function unminedOwnerCalls(
  cctp: CctpDeps,
  at: { readonly chain: EvmChain; readonly owner: string },
): Promise<UnminedCalls> {
  return await handedBack(() => cctp.sender.unmined(at.chain, at.owner));
}

/** `f`, with a chain that cannot be read or a key this worker lacks handing the job back. */
async function handedBack<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    if (err instanceof ChainReadError) throw new Later(2_000, err.message, 'retry');
    if (err instanceof SigningError && err.code === SIGNING_ERROR_CODES.evmKeyMissing)
      throw new Later(5_000, err.message, 'no_key');
    throw err;
  }
}

/** The wait kind of a step that cannot send now. */
export function waitKindOf(step: OwnerTxStep): WaitKind {
  if (step.kind !== 'waiting') return 'retry';
  if (step.reason === 'owner-lacks-gas') return 'balance';
  if (step.reason === 'replicas') return 'replicas';
  return 'retry';
}
