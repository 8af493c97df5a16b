import { cancelBatch, cancelTransfers } from '../../ops/cancel.ts';
import { opsOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { counted } from '../../domain/plural.ts';
import { parseOptions } from '../options.ts';

/**
 * `usdc-batch cancel BATCH [--transfer ID]…`: cancels the batch's unsent (`queued`) transfers, or
 * only the named ones; nothing in flight is cut off, and a held batch stays held. Exit 1 when a
 * named transfer could not be cancelled (it is not queued any more).
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const batchId = args[0] as string;
  const only = parseOptions({ transfer: 'texts' }, options).transfer;
  return await withCli({}, async (ctx) => {
    const deps = await opsOf(ctx);
    if (only.length === 0) {
      const { cancelled } = await ctx.acknowledged(() => cancelBatch(deps, batchId));
      process.stdout.write(
        `cancelled ${counted(cancelled, 'unsent transfer')} of ${batchId}; transfers in flight finish safely\n`,
      );
      return EXIT.ok;
    }
    const { cancelled, skipped } = await ctx.acknowledged(() => cancelTransfers(deps, batchId, only));
    if (cancelled.length > 0) {
      process.stdout.write(
        `cancelled ${counted(cancelled.length, 'unsent transfer')} of ${batchId}: ${cancelled.join(', ')}\n`,
      );
    }
    for (const s of skipped) {
      process.stdout.write(
        `not cancelled: ${s.id} is ${s.state}, not queued (nothing in flight is cut off)\n`,
      );
    }
    return skipped.length > 0 ? EXIT.rejected : EXIT.ok;
  });
}
