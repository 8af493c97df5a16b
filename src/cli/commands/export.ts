import { once } from 'node:events';
import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { exportBatch } from '../../ops/export.ts';
import { NotFoundError } from '../../ops/ops-error.ts';
import { createBatchReader } from '../../present/batch-status.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { plainText } from '../format.ts';
import { parseOptions } from '../options.ts';

export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const batchId = args[0] as string;
  const flags = parseOptions({ format: 'text', output: 'text' }, options);
  // Commander allows csv or json only, csv by default.
  const format = flags.format === 'json' ? 'json' : 'csv';
  return await withCli({}, async (ctx) => {
    const reader = createBatchReader({ redis: ctx.redis, prefix: ctx.prefix });
    if (!(await reader.summary(batchId)))
      throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
    const file = flags.output;
    let out: Writable = process.stdout;
    if (file) {
      // Opened before anything is written: a missing folder or a file that cannot be written is a
      // one-line error (exit 2), never a stream's unhandled 'error' event.
      try {
        out = (await open(file, 'w')).createWriteStream();
      } catch (err) {
        process.stderr.write(`error: cannot write ${plainText(file)}: ${fileErrorText(err)}\n`);
        return EXIT.usage;
      }
    }
    let failure: unknown;
    if (file) out.on('error', (err) => (failure ??= err));
    try {
      // On a terminal, a value's control characters are shown escaped; a file or pipe gets the data.
      const forTerminal = !file && process.stdout.isTTY === true;
      for await (const chunk of exportBatch(reader, batchId, format, { forTerminal })) {
        if (failure) break;
        if (!out.write(chunk)) await once(out, 'drain');
      }
      if (file) {
        out.end();
        await once(out, 'finish');
      }
    } catch (err) {
      // A write that failed (its stream's 'error' was seen first) is answered below; anything else
      // (Redis) is not about the file.
      if (!failure) throw err;
    }
    if (failure) {
      out.destroy();
      process.stderr.write(`error: cannot write ${plainText(file ?? '')}: ${fileErrorText(failure)}\n`);
      return EXIT.usage;
    }
    if (file) process.stderr.write(`wrote ${file}\n`);
    return EXIT.ok;
  });
}

/** `no such file or directory (ENOENT)`: the system's reason, on one line. */
function fileErrorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const reason: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
    ENOTDIR: 'a part of the path is not a directory',
    ENOSPC: 'no space left on the device',
  };
  if (e?.code && reason[e.code]) return `${reason[e.code]} (${e.code})`;
  return plainText(String(e?.message ?? err)).split('\n')[0] ?? 'unknown error';
}
