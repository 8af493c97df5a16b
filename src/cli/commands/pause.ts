import { setPaused } from '../../ops/pause.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

export async function run(): Promise<number> {
  return await withCli({}, async (ctx) => {
    await ctx.acknowledged(() => setPaused({ redis: ctx.redis, prefix: ctx.prefix, actor: ctx.actor }, true));
    process.stdout.write('paused: workers take no new transfers until `usdc-batch resume`\n');
    return EXIT.ok;
  });
}
