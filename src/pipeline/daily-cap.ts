import { formatUsdc } from '../domain/money.ts';
import type { StepsPatch } from '../store/saved-steps.ts';
import { current, saveStep, type Ctx } from './context.ts';
import { waitQueued } from './outcomes.ts';

/**
 * The rolling 24-hour cap, checked atomically at the moment before a payload is made: over it, the
 * transfer waits `queued` with the reason shown, and goes when room frees up.
 */
export async function reserveDailySpend(ctx: Ctx): Promise<void> {
  const res = await reserveOnce(ctx);
  if (!res) return;
  if (res.ok) {
    await saveStep(ctx, { spendReserved: true });
    return;
  }
  const at = new Date(res.retryAt).toISOString();
  await waitQueued(
    ctx,
    `MAX_DAILY_USDC: ${formatUsdc(res.used)} of ${formatUsdc(res.cap)} USDC sent in the last 24 h; waiting (room frees up by ${at})`,
    Math.max(1_000, Math.min(60_000, res.retryAt - ctx.now())),
    'daily_cap',
  );
}

/**
 * The cap taken ahead of the transfer's turn, while it prepares its permit (evm-permit.ts) with the
 * owner's balance already reserved: the patch to save with the prepared permit (`{}` without a cap
 * or when it was taken before), or undefined when the cap has no room now — then it prepares
 * nothing, and its turn waits as reserveDailySpend says. Taken here, the cap's round trips are off
 * the owner's serial path: a prepared permit goes the moment the lease is handed to it.
 */
export async function reserveDailySpendAhead(ctx: Ctx): Promise<StepsPatch | undefined> {
  const res = await reserveOnce(ctx);
  if (!res) return {};
  return res.ok ? { spendReserved: true } : undefined;
}

/**
 * The transfer's reservation under the cap, with the cap it was asked under; undefined without a
 * cap, or when the transfer took it before (`spend_reserved`).
 */
async function reserveOnce(ctx: Ctx) {
  const limit = ctx.deps.spendLimit;
  const rec = current(ctx);
  if (!limit || rec.steps.spendReserved) return undefined;
  const res = await limit.reserve(`${ctx.batchId}/${ctx.transferId}`, rec.amount);
  return { ...res, cap: limit.cap };
}
