import { formatUsdc } from '../domain/money.ts';
import { current, saveStep, type Ctx } from './context.ts';
import { waitQueued } from './outcomes.ts';

/**
 * The rolling 24-hour cap, checked atomically at the moment before a payload is made: over it, the
 * transfer waits `queued` with the reason shown, and goes when room frees up.
 */
export async function reserveDailySpend(ctx: Ctx): Promise<void> {
  const limit = ctx.deps.spendLimit;
  const rec = current(ctx);
  if (!limit || rec.steps.spendReserved) return;
  const res = await limit.reserve(`${ctx.batchId}/${ctx.transferId}`, rec.amount);
  if (res.ok) {
    await saveStep(ctx, { spendReserved: true });
    return;
  }
  const at = new Date(res.retryAt).toISOString();
  await waitQueued(
    ctx,
    `MAX_DAILY_USDC: ${formatUsdc(res.used)} of ${formatUsdc(limit.cap)} USDC sent in the last 24 h; waiting (room frees up by ${at})`,
    Math.max(1_000, Math.min(60_000, res.retryAt - ctx.now())),
    'daily_cap',
  );
}
