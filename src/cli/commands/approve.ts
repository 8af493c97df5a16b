import { createInterface } from 'node:readline';
import { isDigest, type ReviewedRow } from '../../domain/approval-digest.ts';
import { ValidationError } from '../../domain/errors.ts';
import { formatUsdc } from '../../domain/money.ts';
import { approveBatch, auditRefusal, type ApproveOutcome } from '../../ops/approve-batch.ts';
import { FourEyesError, NotFoundError } from '../../ops/ops-error.ts';
import { readApprovals, readReview } from '../../store/approvals.ts';
import { createBatchReader } from '../../present/batch-status.ts';
import { opsOf, withCli, type CliContext } from '../context.ts';
import { EXIT } from '../exit-codes.ts';
import { counted } from '../../domain/plural.ts';
import { table } from '../format.ts';
import { parseOptions } from '../options.ts';
import { loadScreen } from '../../ops/screening-watch.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

/**
 * `usdc-batch approve BATCH [--digest D]` (docs/access.md "Four eyes"): approves a held batch as
 * `cli:<USDC_BATCH_OPERATOR or OS user>`. Without `--digest` it prints the rows the approval would
 * release, their total and digest, and asks; `--digest D` approves those rows without a question,
 * for scripts. Exit 4 when the approver submitted the batch, 3 when the digest is not the batch's
 * now (it prints the current one), 2 when the batch does not exist, 1 when the question is not
 * answered yes.
 */
export async function run(args: string[], options: Record<string, unknown>): Promise<number> {
  const batchId = args[0] as string;
  const given = parseOptions({ digest: 'text' }, options).digest;
  if (given !== undefined && !isDigest(given)) {
    throw new ValidationError(
      'USDC_USAGE_DIGEST',
      '--digest must be the 64 hex digits of the batch’s approval_digest',
    );
  }
  return await withCli({}, async (ctx) => {
    const batch = await createBatchReader({ redis: ctx.redis, prefix: ctx.prefix }).summary(batchId);
    if (!batch) throw new NotFoundError('USDC_BATCH_NOT_FOUND', `batch ${batchId} does not exist`);
    let digest = typeof given === 'string' ? given : undefined;
    if (batch.held && batch.submitted_by === ctx.actor) {
      // Refused before the rows are shown; audited like a refusal by approveBatch.
      const refused = new FourEyesError(batchId, ctx.actor);
      const ops = await opsOf(ctx);
      await ctx.acknowledged(() => auditRefusal(ops, batchId, digest, refused));
      throw refused;
    }
    if (digest === undefined && batch.held) {
      digest = await reviewAndAsk(ctx, batchId);
      if (digest === undefined) {
        out(`not approved: ${batchId} stays held`);
        return EXIT.rejected;
      }
    }
    // A list grown since the enqueue keeps its addresses out of the book (docs/screening.md).
    const screen = await loadScreen(ctx.config);
    const ops = await opsOf(ctx);
    const res = await ctx.acknowledged(() =>
      approveBatch(
        { ...ops, approvalsRequired: ctx.config.approvalsRequired, screen },
        batchId,
        digest ?? '0'.repeat(64),
      ),
    );
    out(outcomeText(batchId, ctx.actor, res));
    return EXIT.ok;
  });
}

/**
 * Prints the rows an approval would release, their total, the digest and the approvals so far, and
 * asks; returns the digest shown when the answer is yes.
 */
async function reviewAndAsk(ctx: CliContext, batchId: string): Promise<string | undefined> {
  const rows: ReviewedRow[] = [];
  const review = await readReview(ctx.redis, ctx.prefix, batchId, (page) => rows.push(...page));
  const approvals = (await readApprovals(ctx.redis, ctx.prefix, batchId)).filter(
    (a) => a.digest === review.digest,
  );
  out(
    `batch ${batchId}: approving releases ${review.rows === 1 ? 'this transfer' : `these ${review.rows} transfers`}:`,
  );
  out(
    table(
      ['id', 'from', 'to', 'amount', 'recipient'],
      rows.map((r) => [r.id, r.from, r.to, r.amount, r.recipient]),
    ),
  );
  out(`total: ${formatUsdc(review.amount)} USDC in ${counted(review.rows, 'transfer')}`);
  out(`approval_digest: ${review.digest}`);
  if (approvals.length > 0) out(`approved so far by: ${approvals.map((a) => a.name).join(', ')}`);
  const answer = await ask(
    `approve ${review.rows === 1 ? 'this transfer' : `these ${review.rows} transfers`}, ${formatUsdc(review.amount)} USDC, as ${ctx.actor}? [y/N] `,
  );
  return answer !== undefined && /^(y|yes)$/i.test(answer.trim()) ? review.digest : undefined;
}

/** One line from stdin after the question; undefined when stdin ends first (no answer is no). */
async function ask(question: string): Promise<string | undefined> {
  process.stdout.write(question);
  const rl = createInterface({ input: process.stdin, terminal: false });
  try {
    return await new Promise<string | undefined>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(undefined));
    });
  } finally {
    rl.close();
    process.stdout.write('\n');
  }
}

/** `1 more approver approves`, `2 more approvers approve`. */
function stillNeeded(n: number): string {
  return n === 1 ? '1 more approver approves' : `${n} more approvers approve`;
}

function outcomeText(batchId: string, actor: string, res: ApproveOutcome): string {
  if (res.already) return `${batchId} is not held; nothing to approve`;
  if (res.held) {
    return `approved ${batchId} as ${actor} (${res.approvals} of ${res.required} approvals): it stays held until ${stillNeeded(res.required - res.approvals)} digest ${res.digest}`;
  }
  const added =
    res.recipientsAdded > 0
      ? `; added ${counted(res.recipientsAdded, 'new recipient')} to the address book`
      : '';
  return `approved ${batchId} as ${actor} (${res.approvals} of ${res.required} approvals): released ${counted(res.released, 'transfer')}${added}`;
}
