import { formatUsdc } from '../domain/money.ts';
import type { TransferRecord } from '../store/transfer-record.ts';
import { saveStep, type Ctx } from './context.ts';
import { waitQueued } from './outcomes.ts';
import { savedSteps } from '../store/saved-steps.ts';

/**
 * The rolling 24-hour cap, checked atomically at the moment before a payload is made: over it, the
 * transfer waits `queued` with the reason shown, and goes when room frees up. Returns the record
 * as it then is.
 */
export async function reserveDailySpend(ctx: Ctx, rec: TransferRecord): Promise<TransferRecord> {
  const limit = ctx.deps.spendLimit;
  if (!limit || savedSteps(rec).spendReserved) return rec;
  const res = await limit.reserve(`${ctx.batchId}/${ctx.transferId}`, rec.amount);
  if (res.ok) {
    return await saveStep(ctx, rec, { spend_reserved: 1 });
  }
  const at = new Date(res.retryAt).toISOString();
  return await waitQueued(
    ctx,
    `MAX_DAILY_USDC: ${formatUsdc(res.used)} of ${formatUsdc(limit.cap)} USDC sent in the last 24 h; waiting (room frees up by ${at})`,
    Math.max(1_000, Math.min(60_000, res.retryAt - ctx.now())),
    'daily_cap',
  );
}
