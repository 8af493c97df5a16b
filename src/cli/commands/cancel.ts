import { cancelBatch } from '../../ops/operations.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

export async function run(args: string[]): Promise<number> {
  return await withCli({}, async (ctx) => {
    const { cancelled } = await cancelBatch(
      { redis: ctx.redis, prefix: ctx.prefix, jobs: ctx.producer(), actor: ctx.actor },
      args[0] as string,
    );
    process.stdout.write(
      `cancelled ${cancelled} unsent transfer(s) of ${args[0]}; transfers in flight finish safely\n`,
    );
    return EXIT.ok;
  });
}
