import { ValidationError } from '../../domain/errors.ts';
import { resolveTransfer } from '../../ops/resolve-transfer.ts';
import { opsOf, withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { parseOptions } from '../options.ts';

export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const { submitted, notSent } = parseOptions({ submitted: 'text', notSent: 'flag' }, options);
  if ((submitted === undefined) === !notSent) {
    throw new ValidationError(
      'USDC_USAGE_RESOLVE',
      'give exactly one of --submitted INTENT_ID or --not-sent',
    );
  }
  return await withCli({}, async (ctx) => {
    const deps = { ...(await opsOf(ctx)), intents: await ctx.producer() };
    const res = await ctx.acknowledged(() =>
      resolveTransfer(
        deps,
        args[0] as string,
        args[1] as string,
        submitted !== undefined ? { submitted } : { notSent: true },
      ),
    );
    process.stdout.write(`${args[1]} is now ${res.state}\n`);
    return EXIT.ok;
  });
}
