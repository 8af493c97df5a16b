import { setPaused } from '../../ops/pause.ts';
import { pausedView } from '../../present/batch-summary.ts';
import { pausedSince } from '../batch-text.ts';
import { auditOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

/** `usdc-batch pause`: workers take no new transfers until `resume`; says since when and by whom. */
export async function run(): Promise<number> {
  return await withCli({}, async (ctx) => {
    const { changed, pause } = await ctx.acknowledged(() =>
      setPaused({ ...auditOf(ctx), actor: ctx.actor }, true),
    );
    const view = pausedView(pause);
    const since = view ? ` ${pausedSince(view)}` : '';
    process.stdout.write(
      changed
        ? `paused${since}: workers take no new transfers until \`usdc-batch resume\`\n`
        : `already paused${since}; nothing changed\n`,
    );
    return EXIT.ok;
  });
}
