import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { exportBatch } from '../../ops/export.ts';
import { createBatchReader } from '../../store/batch-reader.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';

export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const batchId = args[0] as string;
  const format = (options['format'] as 'csv' | 'json' | undefined) ?? 'csv';
  return await withCli({}, async (ctx) => {
    const reader = createBatchReader({ redis: ctx.redis, prefix: ctx.prefix });
    if (!(await reader.summary(batchId))) {
      process.stderr.write(`error: batch ${batchId} does not exist\n`);
      return EXIT.rejected;
    }
    const file = options['output'] as string | undefined;
    const out = file ? createWriteStream(file) : process.stdout;
    // On a terminal, a value's control characters are shown escaped; a file or pipe gets the data.
    const forTerminal = !file && process.stdout.isTTY === true;
    for await (const chunk of exportBatch(reader, batchId, format, { forTerminal })) {
      if (!out.write(chunk)) await once(out, 'drain');
    }
    if (file) {
      out.end();
      await once(out, 'finish');
      process.stderr.write(`wrote ${file}\n`);
    }
    return EXIT.ok;
  });
}
