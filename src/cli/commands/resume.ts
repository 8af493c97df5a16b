import { setPaused } from '../../ops/pause.ts';
import { auditOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

/** `usdc-batch resume`: workers take transfers again. */
export async function run(): Promise<number> {
  return await withCli({}, async (ctx) => {
    const { changed } = await ctx.acknowledged(() => setPaused({ ...auditOf(ctx), actor: ctx.actor }, false));
    process.stdout.write(
      changed ? 'resumed: workers take transfers again\n' : 'not paused; nothing changed\n',
    );
    return EXIT.ok;
  });
}
