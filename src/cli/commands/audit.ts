import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { checkChainLine, startChainCheck, type ChainCheck } from '../../domain/audit-chain.ts';
import { ValidationError } from '../../domain/errors.ts';
import { formatAuditDetail, readAudit } from '../../store/audit.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

/**
 * `usdc-batch audit [--batch ID] [--json]`: the operator actions recorded, newest first.
 * `usdc-batch audit --verify FILE [--json]`: recomputes an AUDIT_LOG_FILE's hash chain
 * (docs/audit.md); names the first line that does not check out (exit 1), and prints the last line's hash,
 * to keep elsewhere: a tail cut off is found by comparing it. Needs no configuration or Redis.
 */
export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions({ batch: 'text', verify: 'text', json: 'flag' }, options);
  if (flags.verify !== undefined) return await verifyFile(flags.verify, flags.json);
  return await withCli({}, async (ctx) => {
    const batch = flags.batch;
    const entries = await readAudit(ctx.redis, ctx.prefix, batch ? { batch } : {});
    if (flags.json) {
      process.stdout.write(`${jsonText({ entries })}\n`);
      return EXIT.ok;
    }
    process.stdout.write(
      entries.length === 0
        ? 'no operator actions recorded\n'
        : `${table(
            ['when', 'who', 'action', 'batch', 'detail'],
            entries.map((e) => [e.at, e.who, e.action, e.batch, formatAuditDetail(e.detail)]),
          )}\n`,
    );
    return EXIT.ok;
  });
}

/** Reads the file a line at a time (it may be large) and checks the chain. */
async function verifyFile(file: string, json: boolean): Promise<number> {
  try {
    if (!statSync(file).isFile()) throw new Error('not a regular file');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ValidationError('USDC_USAGE_AUDIT_FILE', `--verify ${file}: cannot be read (${why})`);
  }
  const check: ChainCheck = startChainCheck();
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let lineNo = 0;
  for await (const line of lines) {
    lineNo++;
    checkChainLine(check, lineNo, line);
    if (check.bad) break;
  }
  lines.close();
  if (json) {
    process.stdout.write(
      `${jsonText({
        file,
        ok: check.bad === undefined,
        lines: check.lines,
        last_hash: check.lastHash,
        first_bad_line: check.bad?.line ?? null,
        problem: check.bad?.reason ?? null,
      })}\n`,
    );
  } else if (check.bad) {
    process.stdout.write(
      `${file}: line ${check.bad.line} ${check.bad.reason}\n` +
        `the chain holds up to the line before it; the last good hash: ${check.lastHash}\n`,
    );
  } else {
    process.stdout.write(
      `${file}: ${check.lines} line(s), the chain holds\n` +
        `last hash: ${check.lastHash}\n` +
        '(keep it elsewhere: a later --verify whose chain does not reach it shows a tail was cut off)\n',
    );
  }
  return check.bad ? EXIT.rejected : EXIT.ok;
}
