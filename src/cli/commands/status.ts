import { TRANSFER_STATES, type TransferState } from '../../domain/transfer.ts';
import { ValidationError } from '../../domain/errors.ts';
import { NotFoundError } from '../../ops/ops-error.ts';
import { createBatchReader, type BatchStatus } from '../../present/batch-status.ts';
import {
  intentsText,
  outcomeText,
  pausedLine,
  screeningLine,
  settledText,
  totalsLines,
} from '../batch-text.ts';
import { warnOnWorkerControls, withCli } from '../context.ts';
import { controlSettingsOf } from '../../config/control-settings.ts';
import { controlDrift } from '../../ops/control-drift.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

const HUMAN_ROWS = 200;

/** While held: the digest an approval names and the approvals of it so far (docs/access.md "Four eyes"). */
function approvalLines(doc: BatchStatus): string[] {
  if (!doc.held || doc.approval_digest === null) return [];
  const counted = doc.approvals.filter(
    (a) => a.digest === doc.approval_digest && a.name !== doc.submitted_by,
  );
  const names = counted.length > 0 ? ` (${counted.map((a) => a.name).join(', ')})` : '';
  return [
    `approval_digest: ${doc.approval_digest}  approvals: ${counted.length} of ${doc.approvals_required}${names}`,
  ];
}

export function renderStatus(doc: BatchStatus, state?: TransferState): string {
  const c = doc.counts;
  const lines = [
    `batch ${doc.batch_id}  (${doc.source}, via ${doc.via}, created ${doc.created_at ?? '?'}${doc.submitted_by ? ` by ${doc.submitted_by}` : ''})`,
    ...(doc.paused ? [pausedLine(doc.paused)] : []),
    `outcome: ${outcomeText(doc)}`,
    `complete: ${doc.complete ? 'yes' : 'no'}  intents settled: ${settledText(doc.settled)}${doc.held ? `  HELD for approval: ${doc.held_reason ?? ''}` : ''}`,
    `queued ${c.queued}  in_progress ${c.in_progress}  submitted ${c.submitted}  failed ${c.failed}  rejected ${c.rejected}  needs_review ${c.needs_review}  cancelled ${c.cancelled}`,
    ...approvalLines(doc),
    intentsText(doc.intents),
    ...totalsLines(doc.totals),
    screeningLine(doc.screening),
    '',
  ];
  if (doc.transfers.length === 0) {
    // Never a bare header: say that nothing matches.
    lines.push(state ? `no transfers in state ${state}` : 'no transfers');
    return `${lines.join('\n')}\n`;
  }
  const shown = doc.transfers.slice(0, HUMAN_ROWS);
  lines.push(
    table(
      ['id', 'line', 'route', 'amount', 'new', 'state', 'intent_id', 'error / reason'],
      shown.map((t) => [
        t.id,
        t.line,
        `${t.from}→${t.to}`,
        t.amount,
        // A recipient that was not in the address book when the batch was enqueued.
        t.new_recipient ? 'NEW' : '',
        t.state,
        t.intent_id,
        t.error
          ? `${t.error.code}: ${t.error.message}`
          : (t.wait_reason ??
            (doc.paused && t.state === 'queued' ? 'processing is paused (usdc-batch resume)' : null)),
      ]),
    ),
  );
  if (doc.transfers.length > shown.length) {
    lines.push(`… ${doc.transfers.length - shown.length} more (use --json, --state or export)`);
  }
  return `${lines.join('\n')}\n`;
}

export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const batchId = args[0] as string;
  const flags = parseOptions({ json: 'flag', watch: 'flag', state: 'text' }, options);
  const state = parseState(flags.state);
  return await withCli({}, async (ctx) => {
    const reader = createBatchReader({ redis: ctx.redis, prefix: ctx.prefix });
    const read = () => reader.status(batchId, state ? { state } : {});
    let doc = await read();
    if (!doc) throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
    if (flags.watch) {
      const tty = process.stdout.isTTY;
      for (;;) {
        if (tty) process.stdout.write('\x1b[2J\x1b[H');
        process.stdout.write(flags.json ? `${jsonText(doc, { compact: true })}\n` : renderStatus(doc, state));
        if (doc.complete) break;
        await new Promise((r) => setTimeout(r, 1_000));
        doc = (await read()) ?? doc;
      }
      return EXIT.ok;
    }
    // The running workers enforce their own controls: a difference is said (a warning with --json).
    const drift = flags.json
      ? await warnOnWorkerControls(ctx)
      : await controlDrift({
          redis: ctx.redis,
          prefix: ctx.prefix,
          settings: controlSettingsOf(ctx.config),
        });
    process.stdout.write(
      flags.json
        ? `${jsonText(doc)}\n`
        : `${renderStatus(doc, state)}${drift ? `\ncontrols: ${drift.text}\n` : ''}`,
    );
    return EXIT.ok;
  });
}

/** `--state S`: one of the transfer states, or a usage error naming them. */
function parseState(state: string | undefined): TransferState | undefined {
  if (state === undefined) return undefined;
  const known = TRANSFER_STATES.find((s) => s === state);
  if (known === undefined) {
    throw new ValidationError('USDC_USAGE_STATE', `--state must be one of ${TRANSFER_STATES.join(', ')}`);
  }
  return known;
}
