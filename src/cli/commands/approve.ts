import { approveBatch } from '../../ops/approve-batch.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { counted } from '../../domain/plural.ts';

export async function run(args: string[]): Promise<number> {
  return await withCli({}, async (ctx) => {
    const res = await ctx.acknowledged(() =>
      approveBatch(
        { redis: ctx.redis, prefix: ctx.prefix, jobs: ctx.producer(), actor: ctx.actor },
        args[0] as string,
      ),
    );
    process.stdout.write(
      res.already
        ? `${args[0]} is not held; nothing to approve\n`
        : `approved ${args[0]}: released ${counted(res.released, 'transfer')}${
            res.recipientsAdded > 0
              ? `; added ${counted(res.recipientsAdded, 'new recipient')} to the address book`
              : ''
          }\n`,
    );
    return EXIT.ok;
  });
}
