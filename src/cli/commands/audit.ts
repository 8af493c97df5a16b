import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { checkChainLine, GENESIS_HASH, startChainCheck, type ChainCheck } from '../../domain/audit-chain.ts';
import { ValidationError } from '../../domain/errors.ts';
import { formatAuditDetail, readAudit } from '../../store/audit.ts';
import { withCli } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

/**
 * `usdc-batch audit [--batch ID] [--json]`: the operator actions recorded, newest first.
 * `usdc-batch audit --verify FILE [--head HASH] [--json]`: recomputes an AUDIT_LOG_FILE's hash chain
 * (docs/audit.md); names the first line that does not check out (exit 1), and prints the last line's
 * hash, to keep elsewhere; with `--head`, a chain that does not reach that hash fails too (exit 1).
 * Needs no configuration or Redis.
 */
export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions({ batch: 'text', verify: 'text', head: 'text', json: 'flag' }, options);
  const { verify, head } = flags;
  if (head !== undefined && (verify === undefined || !HASH.test(head))) {
    throw new ValidationError(
      'USDC_USAGE_AUDIT_HEAD',
      '--head takes the 64 hex digits of a hash the chain must reach, with --verify FILE',
    );
  }
  if (verify !== undefined) return await verifyFile(verify, { json: flags.json, head: head?.toLowerCase() });
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

const HASH = /^[0-9a-fA-F]{64}$/;

/**
 * Reads the file a line at a time (it may be large) and checks the chain; with `head`, the chain
 * must reach that hash (a line's `hash`, or 64 zeros): a cut tail, an emptied file or a chain
 * rebuilt from scratch does not.
 */
async function verifyFile(
  file: string,
  options: { readonly json: boolean; readonly head: string | undefined },
): Promise<number> {
  const { json, head } = options;
  try {
    if (!statSync(file).isFile()) throw new Error('not a regular file');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ValidationError('USDC_USAGE_AUDIT_FILE', `--verify ${file}: cannot be read (${why})`);
  }
  const check: ChainCheck = startChainCheck();
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  let lineNo = 0;
  let reached = head === GENESIS_HASH;
  for await (const line of lines) {
    lineNo++;
    checkChainLine(check, lineNo, line);
    if (check.bad) break;
    if (check.lastHash === head) reached = true;
  }
  lines.close();
  const unreached = head !== undefined && check.bad === undefined && !reached;
  const problem = unreached
    ? `the chain does not reach the head ${head}: lines were cut off its end, or the file was emptied or rebuilt`
    : (check.bad?.reason ?? null);
  if (json) {
    process.stdout.write(
      `${jsonText({
        file,
        ok: check.bad === undefined && !unreached,
        lines: check.lines,
        last_hash: check.lastHash,
        first_bad_line: check.bad?.line ?? null,
        problem,
        ...(head !== undefined ? { head, head_reached: reached } : {}),
      })}\n`,
    );
  } else if (unreached) {
    process.stdout.write(`${file}: ${check.lines} line(s); ${problem}\n` + `last hash: ${check.lastHash}\n`);
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
  return check.bad || unreached ? EXIT.rejected : EXIT.ok;
}
