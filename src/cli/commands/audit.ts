import { formatAuditDetail, readAudit } from '../../store/audit.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';

export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  return await withCli({}, async (ctx) => {
    const batch = options['batch'] as string | undefined;
    const entries = await readAudit(ctx.redis, ctx.prefix, batch ? { batch } : {});
    if (options['json']) {
      process.stdout.write(`${jsonText({ entries })}\n`);
      return EXIT.ok;
    }
    process.stdout.write(
      entries.length === 0
        ? 'no operator actions recorded\n'
        : `${table(
            ['when', 'actor', 'action', 'batch', 'detail'],
            entries.map((e) => [e.at, e.actor, e.action, e.batch, formatAuditDetail(e.detail)]),
          )}\n`,
    );
    return EXIT.ok;
  });
}
