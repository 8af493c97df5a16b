import { createBatchReader } from '../../present/batch-status.ts';
import { pausedView, type BatchSummary } from '../../present/batch-summary.ts';
import { readPause } from '../../store/pause-flag.ts';
import { outcomeText, pausedLine } from '../batch-text.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions({ json: 'flag' }, options);
  return await withCli({}, async (ctx) => {
    const [list, pause] = await Promise.all([
      createBatchReader({ redis: ctx.redis, prefix: ctx.prefix }).list(100),
      readPause(ctx.redis, ctx.prefix),
    ]);
    const paused = pausedView(pause);
    if (flags.json) {
      process.stdout.write(`${jsonText({ batches: list, paused })}\n`);
      return EXIT.ok;
    }
    if (paused) process.stdout.write(`${pausedLine(paused)}\n\n`);
    if (list.length === 0) {
      process.stdout.write('no batches yet\n');
      return EXIT.ok;
    }
    process.stdout.write(renderBatches(list));
    return EXIT.ok;
  });
}

/** The batches as a table: each one's outcome (`all paid`, `1 failed`) before its counts. */
export function renderBatches(list: readonly BatchSummary[]): string {
  return `${table(
    [
      'batch',
      'created',
      'source',
      'via',
      'outcome',
      'complete',
      'intents_settled',
      'queued',
      'in_prog',
      'submitted',
      'failed',
      'rejected',
      'review',
      'cancelled',
      'amount',
      'paid',
    ],
    list.map((b) => [
      b.batch_id,
      b.created_at,
      b.source,
      b.via,
      outcomeText(b),
      b.held ? 'held' : b.complete ? 'yes' : 'no',
      b.settled === null ? 'unknown' : b.settled ? 'yes' : 'no',
      b.counts.queued,
      b.counts.in_progress,
      b.counts.submitted,
      b.counts.failed,
      b.counts.rejected,
      b.counts.needs_review,
      b.counts.cancelled,
      b.totals.amount,
      b.totals.paid.amount,
    ]),
  )}\n`;
}
