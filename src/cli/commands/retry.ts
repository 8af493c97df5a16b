import { retryBatch } from '../../ops/retry-batch.ts';
import { opsOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { counted } from '../../domain/plural.ts';

export async function run(args: string[]): Promise<number> {
  return await withCli({}, async (ctx) => {
    const ops = await opsOf(ctx);
    const { requeued, heldReason } = await ctx.acknowledged(() =>
      retryBatch({ ...ops, config: ctx.config }, args[0] as string),
    );
    process.stdout.write(`re-queued ${counted(requeued, 'failed transfer')} of ${args[0]}\n`);
    if (heldReason !== null) {
      process.stdout.write(
        `the batch is held for approval: nothing is sent until \`usdc-batch approve ${args[0]}\`${heldReason ? ` (${heldReason})` : ''}\n`,
      );
    }
    return EXIT.ok;
  });
}
