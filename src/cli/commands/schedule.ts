import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { ValidationError } from '../../domain/errors.ts';
import { formatUsdc } from '../../domain/money.ts';
import { bufferSource } from '../../ingest/csv-source.ts';
import { screenRecipients } from '../../ingest/hold-rules.ts';
import type { IngestIssue } from '../../ingest/ingest-issue.ts';
import { firstIssues } from '../../ingest/issue-list.ts';
import { onRoad } from '../../ingest/road-rows.ts';
import { validateCsv } from '../../ingest/validate-input.ts';
import { checkScheduleSpec, SCHEDULE_NAME_PATTERN } from '../../queue/schedule-identity.ts';
import {
  listSchedules,
  openScheduleQueue,
  putSchedule,
  removeSchedule,
  type ScheduleDeps,
  type ScheduleInfo,
} from '../../queue/schedules.ts';
import { NotFoundError } from '../../ops/ops-error.ts';
import { recordAudit } from '../../store/audit.ts';
import { parsePolicy, readPolicyFile } from '../../treasury/policy.ts';
import { auditOf, withCli, type CliContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { issueReport, jsonText, table } from '../format.ts';
import { parseOptions, roadOption } from '../options.ts';

// The CSV is kept in Redis and validated again at every firing: a schedule is for a treasury or
// payroll file, not for a bulk import of millions of rows.
const MAX_SCHEDULE_CSV_BYTES = 32 * 1024 * 1024;

const usage = (code: string, message: string) => new ValidationError(`USDC_USAGE_${code}`, message);
const out = (s: string) => process.stdout.write(`${s}\n`);

/**
 * `usdc-batch schedule add NAME --cron EXPR --file FILE.csv [--tz ZONE]`, `schedule list [--json]`,
 * `schedule remove NAME` (docs/operating.md "The commands"). `add` validates the file now, as `enqueue` would, and
 * stores its content; exit 1 when the file is refused, 2 for a bad name, cron or time zone.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const [sub, name] = args;
  switch (sub) {
    case 'add':
      return await add(
        checkName(name),
        parseOptions({ cron: 'text', file: 'text', rebalance: 'text', tz: 'text', via: 'text' }, options),
      );
    case 'list':
      return await list(parseOptions({ json: 'flag' }, options).json);
    case 'remove':
      return await remove(checkName(name));
    default:
      throw usage('SCHEDULE_SUBCOMMAND', 'schedule needs add, list or remove');
  }
}

function checkName(name: string | undefined): string {
  if (name === undefined || !SCHEDULE_NAME_PATTERN.test(name)) {
    throw usage(
      'SCHEDULE_NAME',
      'a schedule name is 1-40 characters of A-Z, a-z, 0-9, "_" or "-", starting with a letter or digit',
    );
  }
  return name;
}

async function withSchedules<T>(fn: (ctx: CliContext, deps: ScheduleDeps) => Promise<T>): Promise<T> {
  return await withCli({}, async (ctx) => {
    const queue = openScheduleQueue(ctx.redis, ctx.prefix);
    try {
      return await fn(ctx, { redis: ctx.redis, prefix: ctx.prefix, queue });
    } finally {
      await queue.close();
    }
  });
}

/** The schedule's CSV, read whole (a schedule keeps its file in Redis): a usage error names the file. */
function readScheduleCsv(file: string): Buffer {
  try {
    const st = statSync(file);
    if (!st.isFile()) throw usage('FILE', `${file} is not a file`);
    if (st.size > MAX_SCHEDULE_CSV_BYTES) {
      throw usage(
        'FILE',
        `${file} is larger than ${MAX_SCHEDULE_CSV_BYTES / 1024 / 1024} MiB; a schedule keeps its file in Redis`,
      );
    }
    return readFileSync(file);
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw usage('FILE', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** What would refuse every firing of this file: its rows' problems, or a total over MAX_BATCH_USDC. */
function csvProblems(input: Awaited<ReturnType<typeof validateCsv>>, cap: bigint | undefined): IngestIssue[] {
  const problems: IngestIssue[] = [...input.issues, ...input.duplicates];
  if (!input.fatal && problems.length === 0) {
    const total = input.transfers.reduce((s, t) => s + t.amount, 0n);
    if (cap !== undefined && total > cap) {
      problems.push({
        line: null,
        column: 'amount',
        message: `batch total ${formatUsdc(total)} is above MAX_BATCH_USDC (${formatUsdc(cap)})`,
      });
    }
  }
  return problems;
}

async function add(
  name: string,
  flags: {
    readonly cron?: string | undefined;
    readonly file?: string | undefined;
    readonly rebalance?: string | undefined;
    readonly tz?: string | undefined;
    readonly via?: string | undefined;
  },
): Promise<number> {
  const via = roadOption(flags.via);
  const cron = flags.cron ?? '';
  const tz = flags.tz ?? 'UTC';
  const file = flags.file ?? '';
  const rebalance = flags.rebalance;
  if ((file === '') === (rebalance === undefined))
    throw usage('SCHEDULE_SOURCE', 'schedule add needs either --file FILE.csv or --rebalance POLICY.yaml');
  const spec = checkScheduleSpec(cron, tz);
  if (!spec.ok) throw usage('SCHEDULE_CRON', spec.message);
  if (rebalance !== undefined && via !== undefined)
    throw usage('SCHEDULE_VIA', '--via is for a --file schedule; a rebalancing policy names its road (via:)');
  if (rebalance !== undefined) return await addRebalance(name, cron, tz, rebalance);
  const csv = readScheduleCsv(file);

  return await withSchedules(async (ctx, deps) => {
    // Strict, as `enqueue` without flags: a schedule that would be refused at every firing is refused now.
    // On CCTP, a SOLANA row is an invalid row: refused now rather than at every firing.
    const input = onRoad(
      await validateCsv(bufferSource(csv), { maxTransferUsdc: ctx.config.maxTransferUsdc }),
      via ?? ctx.config.transferVia,
    );
    const problems = csvProblems(input, ctx.config.maxBatchUsdc);
    if (input.fatal || problems.length > 0) {
      out(`rejected: schedule ${name} was not added`);
      const count = problems.length + input.omittedIssues + input.omittedDuplicates;
      process.stdout.write(issueReport(firstIssues(problems), count));
      return EXIT.rejected;
    }
    const total = input.transfers.reduce((s, t) => s + t.amount, 0n);
    const { replaced, next } = await ctx.acknowledged(async () => {
      const put = await putSchedule(deps, {
        name,
        cron,
        tz,
        csv: csv.toString('utf8'),
        createdBy: ctx.actor,
        rows: input.transfers.length,
        total,
        via,
      });
      await recordAudit(auditOf(ctx), {
        who: ctx.actor,
        action: 'schedule_add',
        batch: null,
        detail: {
          name,
          cron,
          tz,
          rows: input.transfers.length,
          amount: formatUsdc(total),
          ...(via !== undefined ? { via } : {}),
          replaced: put.replaced,
        },
      });
      return put;
    });
    out(`schedule ${name} ${replaced ? 'replaced' : 'added'}`);
    out(`  cron         ${cron} (${tz})`);
    out(`  rows         ${input.transfers.length}`);
    out(`  total        ${formatUsdc(total)} USDC per firing`);
    out(`  via          ${via ?? `${ctx.config.transferVia} (TRANSFER_VIA at each firing)`}`);
    out(`  next firing  ${next === null ? '-' : new Date(next).toISOString()}`);
    out(`  batch ids    ${name}-YYYYMMDDTHHMMSSZ (UTC time of each firing)`);
    const threshold = ctx.config.approvalThresholdUsdc;
    if (threshold !== undefined && total >= threshold) {
      out(
        `  each firing is held for approval (total reaches APPROVAL_THRESHOLD_USDC ${formatUsdc(threshold)})`,
      );
    }
    const screen = await screenRecipients(ctx.redis, ctx.prefix, input.transfers);
    if (screen.notInBook.size > 0) {
      const policy = ctx.config.newRecipientPolicy;
      out(
        `  ${screen.notInBook.size === 1 ? '1 row pays an address' : `${screen.notInBook.size} rows pay addresses`} not in the address book: ${
          policy === 'allow'
            ? 'paid and flagged (NEW_RECIPIENT_POLICY=allow)'
            : policy === 'hold'
              ? 'the next firing is held for approval (NEW_RECIPIENT_POLICY=hold)'
              : 'refused at every firing (NEW_RECIPIENT_POLICY=reject); add them with `usdc-batch recipients add`'
        }`,
      );
    }
    return EXIT.ok;
  });
}

/** `schedule add NAME --cron EXPR --rebalance POLICY.yaml`: stores the policy; each firing plans afresh. */
async function addRebalance(name: string, cron: string, tz: string, file: string): Promise<number> {
  const { text, policy } = readPolicyFile(file);
  return await withSchedules(async (ctx, deps) => {
    const { replaced, next } = await ctx.acknowledged(async () => {
      const put = await putSchedule(deps, {
        name,
        cron,
        tz,
        policy: { text, file: basename(file) },
        createdBy: ctx.actor,
        rows: 0,
        total: 0n,
      });
      await recordAudit(auditOf(ctx), {
        who: ctx.actor,
        action: 'schedule_add',
        batch: null,
        detail: {
          name,
          cron,
          tz,
          rebalance: policy.name,
          chains: policy.chains.map((c) => c.chain).join(','),
        },
      });
      return put;
    });
    out(`schedule ${name} ${replaced ? 'replaced' : 'added'}: rebalancing policy ${policy.name}`);
    out(`  cron         ${cron} (${tz})`);
    out(`  chains       ${policy.chains.map((c) => c.chain).join(', ')}`);
    out(`  next firing  ${next === null ? '-' : new Date(next).toISOString()}`);
    out(
      `  batch ids    ${name}-YYYYMMDDTHHMMSSZ (UTC time of each firing), planned from the balances of that moment`,
    );
    return EXIT.ok;
  });
}

function scheduleDocument(s: ScheduleInfo) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    name: s.name,
    kind: s.kind,
    policy: s.policy === null ? null : policyName(s),
    cron: s.cron,
    tz: s.tz,
    rows: s.rows,
    total: formatUsdc(s.total),
    created_at: iso(s.createdAt),
    created_by: s.createdBy,
    next_run: iso(s.next),
    last_fired_at: iso(s.lastFiredAt),
    last_batch: s.lastBatch,
    last_status: s.lastStatus,
    last_error: s.lastError,
    held: s.heldFirings.length > 0,
    held_firings: s.heldFirings,
  };
}

/** The stored policy's name (its `name`, else the file's). */
function policyName(s: ScheduleInfo): string {
  const parsed = parsePolicy(s.policy ?? '', s.policyFile ?? s.name);
  return parsed.ok ? parsed.policy.name : (s.policyFile ?? s.name);
}

async function list(json: boolean): Promise<number> {
  return await withSchedules(async (_ctx, deps) => {
    const schedules = (await listSchedules(deps)).map(scheduleDocument);
    if (json) {
      out(jsonText({ schedules }));
      return EXIT.ok;
    }
    if (schedules.length === 0) {
      out('no schedules');
      return EXIT.ok;
    }
    out(
      table(
        ['name', 'cron', 'tz', 'rows', 'total', 'next', 'last batch', 'last status', 'held'],
        schedules.map((s) => [
          s.name,
          s.cron,
          s.tz,
          s.kind === 'rebalance' ? `rebalance ${s.policy ?? ''}` : s.rows,
          s.kind === 'rebalance' ? '-' : s.total,
          s.next_run,
          s.last_batch,
          s.last_status,
          s.held ? `HELD: ${s.held_firings.join(', ')} (later firings too)` : '',
        ]),
      ),
    );
    return EXIT.ok;
  });
}

async function remove(name: string): Promise<number> {
  return await withSchedules(async (ctx, deps) => {
    const removed = await ctx.acknowledged(async () => {
      const gone = await removeSchedule(deps, name);
      if (gone) {
        await recordAudit(auditOf(ctx), {
          who: ctx.actor,
          action: 'schedule_remove',
          batch: null,
          detail: { name },
        });
      }
      return gone;
    });
    if (!removed) throw new NotFoundError('USDC_SCHEDULE_NOT_FOUND', `no schedule named ${name}`);
    out(`schedule ${name} removed; it fires no more`);
    return EXIT.ok;
  });
}
