import { loadScreen } from '../../ops/screening-watch.ts';
import { readFileSync, statSync } from 'node:fs';
import { ValidationError } from '../../domain/errors.ts';
import { formatIssue, sortIssues } from '../../ingest/ingest-issue.ts';
import { readRecipientCsv } from '../../ingest/recipient-file.ts';
import { addRecipient, importRecipients, listRecipients, removeRecipient } from '../../ops/recipients.ts';
import { auditOf, withCli, type CliContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { counted } from '../../domain/plural.ts';
import { parseOptions } from '../options.ts';

// An address book file of a million lines is ~60 MB; anything larger is not an address book.
const MAX_IMPORT_BYTES = 64 * 1024 * 1024;

const usage = (code: string, message: string) => new ValidationError(`USDC_USAGE_${code}`, message);
const out = (s: string) => process.stdout.write(`${s}\n`);

/**
 * `usdc-batch recipients list [--json]`, `recipients add ADDRESS [--label L]`, `recipients remove
 * ADDRESS`, `recipients import FILE.csv` (docs/operating.md "The commands"): the address book of known recipients.
 * Exit 1 when an address or the file is refused (nothing is changed), 2 for usage.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const [sub, arg] = args;
  switch (sub) {
    case 'list': {
      const flags = parseOptions({ json: 'flag' }, options);
      return await withCli({}, (ctx) => list(ctx, flags.json));
    }
    case 'add': {
      const flags = parseOptions({ label: 'text' }, options);
      return await withCli({}, (ctx) => add(ctx, required(arg, 'an address'), flags.label));
    }
    case 'remove':
      return await withCli({}, (ctx) => remove(ctx, required(arg, 'an address')));
    case 'import':
      return await importFile(required(arg, 'a CSV file'));
    default:
      throw usage('RECIPIENTS_SUBCOMMAND', 'recipients needs list, add, remove or import');
  }
}

function required(arg: string | undefined, what: string): string {
  if (arg === undefined || arg === '') throw usage('RECIPIENTS_ARGUMENT', `this command needs ${what}`);
  return arg;
}

async function list(ctx: CliContext, json: boolean): Promise<number> {
  const recipients = await listRecipients({ redis: ctx.redis, prefix: ctx.prefix });
  if (json) {
    out(jsonText({ recipients }));
    return EXIT.ok;
  }
  if (recipients.length === 0) {
    out('the address book is empty');
    return EXIT.ok;
  }
  out(
    table(
      ['address', 'family', 'label', 'added by', 'added at', 'via'],
      recipients.map((r) => [r.address, r.family, r.label, r.added_by, r.added_at, r.via]),
    ),
  );
  out(counted(recipients.length, 'recipient'));
  return EXIT.ok;
}

async function add(ctx: CliContext, address: string, label: string | undefined): Promise<number> {
  const screen = await loadScreen(ctx.config);
  const { address: a, was } = await ctx.acknowledged(() =>
    addRecipient({ ...auditOf(ctx), actor: ctx.actor, screen }, address, label),
  );
  out(
    was === 'known'
      ? `${a.address} is already in the address book${label !== undefined ? ' (label updated)' : ''}`
      : `added ${a.address} to the address book${was === 'removed' ? ' (it had been removed: payments to it are no longer held)' : ''}`,
  );
  return EXIT.ok;
}

async function remove(ctx: CliContext, address: string): Promise<number> {
  const { address: a, existed } = await ctx.acknowledged(() =>
    removeRecipient({ ...auditOf(ctx), actor: ctx.actor }, address),
  );
  out(
    `${existed ? 'removed' : 'marked as removed (it was not in the book)'} ${a.address}: every payment to it is held for approval until it is added again; transfers to it not yet signed are held`,
  );
  return EXIT.ok;
}

async function importFile(file: string): Promise<number> {
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw usage('FILE', `${file} is not a file`);
    if (st.size > MAX_IMPORT_BYTES) throw usage('FILE', `${file} is larger than 64 MiB`);
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw usage('FILE', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const input = readRecipientCsv(text);
  return await withCli({}, async (ctx) => {
    const screen = await loadScreen(ctx.config);
    const res = await ctx.acknowledged(() =>
      importRecipients({ ...auditOf(ctx), actor: ctx.actor, screen }, input, file),
    );
    if (res.status === 'rejected') {
      const sorted = sortIssues(res.errors);
      out('rejected: nothing was imported');
      out(`\n${counted(sorted.length, 'problem')}:`);
      for (const p of sorted.slice(0, 1000)) out(`  ${formatIssue(p)}`);
      if (sorted.length > 1000) out(`  … and ${sorted.length - 1000} more`);
      return EXIT.rejected;
    }
    out(
      `imported ${counted(res.rows, 'address', 'addresses')}: ${res.added} added, ${res.updated} already in the book`,
    );
    return EXIT.ok;
  });
}
