import { setPaused } from '../../ops/pause.ts';
import { auditOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

export async function run(): Promise<number> {
  return await withCli({}, async (ctx) => {
    const changed = await ctx.acknowledged(() => setPaused({ ...auditOf(ctx), actor: ctx.actor }, false));
    process.stdout.write(changed ? 'resumed\n' : 'not paused: nothing to resume\n');
    return EXIT.ok;
  });
}
