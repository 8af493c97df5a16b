import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor } from '../helpers/cli.ts';
import { startStack, transferJobStates, waitsCounted, type Stack } from '../helpers/e2e.ts';
import { startServe } from '../helpers/serve.ts';
import { mixedRows, randomEvmAddress, type Row } from '../helpers/fixtures.ts';

const HOOK = 'hook-token-cli-ops-0123456789';

/** The operator commands, each through the real `usdc-batch` entry point as its own process. */
describe('operator commands through the CLI', () => {
  let stack: Stack;
  const cli = (args: string[]) => runCli(args, stack.env);

  beforeAll(async () => {
    stack = await startStack();
    stack.startWorker();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('status (table, --json, --state), batches, export (csv, json, -o) and audit describe a finished batch', async () => {
    // Two rows below the service's fee are refused by the estimate: they end `failed`.
    const rows: Row[] = [
      ...mixedRows(6, 'ops'),
      { id: 'tiny-1', from: 'BASE', to: 'ARB', amount: '0.000001', recipient: randomEvmAddress() },
      { id: 'tiny-2', from: 'ETH', to: 'BASE', amount: '0.000002', recipient: randomEvmAddress() },
    ];
    const { batchId } = await stack.enqueue(rows);
    await stack.waitComplete(batchId, 60_000);

    const json = await cli(['status', batchId, '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as Record<string, unknown> & {
      counts: Record<string, number>;
      transfers: Record<string, unknown>[];
    };
    expect(Object.keys(doc)).toEqual(
      expect.arrayContaining([
        'batch_id',
        'created_at',
        'source',
        'complete',
        'held',
        'counts',
        'totals',
        'transfers',
      ]),
    );
    expect(doc.counts).toEqual({
      queued: 0,
      in_progress: 0,
      submitted: 6,
      failed: 2,
      rejected: 0,
      needs_review: 0,
      cancelled: 0,
    });
    for (const key of [
      'id', 'line', 'from', 'to', 'amount', 'recipient', 'memo', 'state', 'intent_id', 'intent_status',
      'tx_hash', 'tx_signature', 'fee', 'net_receive', 'attempts', 'error', 'evidence', 'trace_id', 'updated_at',
    ]) {
      expect(doc.transfers[0]).toHaveProperty(key);
    } // prettier-ignore
    // Tracing is off unless an OTLP endpoint is set (docs/traces.md): no transfer has a trace.
    for (const t of doc.transfers) expect(t['trace_id']).toBeNull();
    // A plain submitted transfer has no evidence; a failed one says what decided it.
    const byState = (s: string) => doc.transfers.filter((t) => t['state'] === s);
    for (const t of byState('submitted')) expect(t['evidence']).toEqual([]);
    for (const t of byState('failed')) {
      expect(t['evidence']).toEqual([
        expect.stringMatching(/^\d{4}-\d\d-\d\dT\S+Z failed: estimate_refused: /),
      ]);
    }
    const failed = await cli(['status', batchId, '--json', '--state', 'failed']);
    const failedDoc = JSON.parse(failed.stdout) as { transfers: { id: string; error: { code: string } }[] };
    expect(failedDoc.transfers.map((t) => t.id).sort()).toEqual(['tiny-1', 'tiny-2']);
    expect(failedDoc.transfers[0]?.error.code).toBe('estimate_refused');

    const human = await cli(['status', batchId]);
    expect(human.stdout).toMatch(/submitted 6\s+failed 2/);
    expect(human.stdout).toMatch(/^outcome: 2 failed$/m);
    expect(human.stdout).toMatch(/tiny-1 .* failed .* estimate_refused/);

    const batches = JSON.parse((await cli(['batches', '--json'])).stdout) as {
      batches: { batch_id: string }[];
    };
    expect(batches.batches.map((b) => b.batch_id)).toContain(batchId);
    const batchesText = (await cli(['batches'])).stdout;
    expect(batchesText.split('\n').find((l) => l.startsWith(batchId))).toMatch(/\s2 failed\s+yes\s/);

    const csv = await cli(['export', batchId]);
    const lines = csv.stdout.trim().split(/\r?\n/);
    expect(lines[0]).toMatch(/^id,line,from,to,amount,recipient,memo,state,intent_id/);
    expect(lines).toHaveLength(9);
    const file = join(stack.dir, 'out.json');
    expect((await cli(['export', batchId, '--format', 'json', '-o', file])).code).toBe(0);
    const exported = JSON.parse(readFileSync(file, 'utf8')) as {
      id: string;
      intent_id: string | null;
      evidence: string[];
    }[];
    expect(exported).toHaveLength(8);
    expect(exported.find((t) => t.id === 'tiny-1')?.evidence).toEqual(
      (byState('failed').find((t) => t['id'] === 'tiny-1') as { evidence: string[] }).evidence,
    );
    expect(exported.filter((t) => t.intent_id !== null)).toHaveLength(6);

    // Paused, so that nothing can finish the re-queued transfers before we look: the batch is
    // re-opened by the time the command returns.
    expect((await cli(['pause'])).code).toBe(0);
    const retry = await cli(['retry', batchId]);
    expect(retry.stdout).toMatch(/re-queued 2 failed/);
    const reopened = await stack.status(batchId);
    expect(reopened.complete).toBe(false);
    expect(reopened.counts.queued).toBe(2);
    expect((await cli(['resume'])).code).toBe(0);
    const again = await stack.waitComplete(batchId, 60_000);
    expect(again.counts.failed).toBe(2);
    expect(again.counts.submitted).toBe(6);

    const audit = JSON.parse((await cli(['audit', '--batch', batchId, '--json'])).stdout) as {
      entries: { action: string; who: string }[];
    };
    expect(audit.entries.map((e) => e.action).sort()).toEqual(['enqueue', 'retry']);
    // (pause and resume are not about one batch: they appear in the unfiltered audit below)
    for (const e of audit.entries) expect(e.who).toMatch(/^cli:/);
  });

  it('resolve refuses --not-sent while the permit can execute, and records --submitted', async () => {
    // The transfer executes but the answer is lost, and the re-send is refused: needs_review.
    await stack.sandbox.admin.configure({
      faultScript: [{ op: 'transfer', fault: 'fail_after' }],
      idempotencyReplay: false,
    });
    const { batchId } = await stack.enqueue([
      { id: 'lost-1', from: 'ARB', to: 'ETH', amount: '300.00', recipient: randomEvmAddress() },
    ]);
    const doc = await stack.waitComplete(batchId, 60_000);
    await stack.sandbox.admin.configure({ idempotencyReplay: true });
    expect(doc.transfers[0]?.state).toBe('needs_review');
    // status --json says what was seen, oldest first: the lost answer, the refused re-send, the decision.
    const seen = JSON.parse((await cli(['status', batchId, '--json'])).stdout) as {
      transfers: { evidence: string[] }[];
    };
    const evidence = seen.transfers[0]?.evidence ?? [];
    expect(evidence.map((l) => l.replace(/^\S+ /, ''))).toEqual([
      expect.stringMatching(/^send 1 failed: ambiguous: HTTP 5\d\d/),
      expect.stringMatching(/^send 2 failed: rejected: HTTP 4\d\d/),
      expect.stringMatching(/^needs_review: outcome_unknown: the service may have executed this payment/),
    ]);
    const times = evidence.map((l) => Date.parse(l.split(' ')[0] ?? ''));
    expect(times.every((t, i) => Number.isFinite(t) && (i === 0 || t >= times[i - 1]!))).toBe(true);

    const early = await cli(['resolve', batchId, 'lost-1', '--not-sent']);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/could still execute until \d{4}-\d\d-\d\dT.*accepted from then on/);
    expect((await stack.status(batchId)).transfers[0]?.state).toBe('needs_review');

    const usage = await cli(['resolve', batchId, 'lost-1']);
    expect(usage.code).toBe(2);

    const intent = (await stack.ledger()).find((e) =>
      e.idempotency_key?.startsWith(`${batchId}/lost-1/`),
    )?.intent_id;
    expect(intent).toBeDefined();
    const ok = await cli(['resolve', batchId, 'lost-1', '--submitted', intent as string]);
    expect(ok.code).toBe(0);
    const after = await stack.status(batchId);
    expect(after.transfers[0]).toMatchObject({ state: 'submitted', intent_id: intent });
    expect(after.complete).toBe(true);
    expect(after.totals.paid.amount).toBe('300.00');
    // The resolved intent is followed like a sent one (first poll after 15 s): the batch settles.
    const settled = await waitFor(
      'the resolved batch to settle',
      async () => {
        const d = await stack.status(batchId);
        return d.settled === true ? d : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(settled.transfers[0]?.intent_status).toBe('complete');
    expect(settled.intents).toEqual({ complete: 1, failed: 0, untracked: 0, open: 0 });
  });

  it('pause holds new work; cancel (CLI and HTTP) makes unsent transfers cancelled for good: retry, CLI or HTTP, re-queues none and resume pays none', async () => {
    expect((await cli(['pause'])).code).toBe(0);
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const pausedBefore = await waitsCounted(stack.client, prefix, 'paused');
    const held = await stack.enqueue(mixedRows(4, 'paused'));
    const other = await stack.enqueue(mixedRows(3, 'later'));
    const part = await stack.enqueue(mixedRows(2, 'part'));
    // The running worker takes each job and hands it back to wait for the resume: every job is
    // delayed and the paused waits are counted, and each transfer is still queued.
    const jobs = (
      await Promise.all(
        [held, other, part].map(async ({ batchId }) =>
          (await stack.status(batchId)).transfers.map((t) => ({ batchId, id: t.id, from: t.from })),
        ),
      )
    ).flat();
    expect(jobs).toHaveLength(9);
    await waitFor(
      'the worker to hand every job back while paused',
      async () =>
        (await waitsCounted(stack.client, prefix, 'paused')) >= pausedBefore + 9 &&
        (await transferJobStates(stack, jobs)).every((s) => s === 'delayed'),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect((await stack.status(held.batchId)).counts.queued).toBe(4);
    expect((await stack.status(other.batchId)).counts.queued).toBe(3);
    expect((await stack.status(part.batchId)).counts.queued).toBe(2);

    const cancel = await cli(['cancel', held.batchId]);
    expect(cancel.stdout).toMatch(/cancelled 4 unsent/);
    const cancelled = await stack.status(held.batchId);
    expect(cancelled.counts).toMatchObject({ cancelled: 4, failed: 0, queued: 0 });
    expect(cancelled.transfers.every((t) => t.state === 'cancelled' && t.error?.code === 'cancelled')).toBe(
      true,
    );
    expect(cancelled.complete).toBe(true);

    // Finding 2 of issue 33: a cancelled row was `failed`, and retry — here the HTTP route — re-queued it.
    const api = await startServe({ ...stack.env, HOOK_TOKEN: HOOK });
    try {
      const partIds = (await stack.status(part.batchId)).transfers.map((t) => t.id);
      const one = await api.call(`/v1/batches/${part.batchId}/cancel`, {
        method: 'POST',
        token: HOOK,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ transfers: [partIds[0]] }),
      });
      expect(one.status).toBe(200);
      expect(await one.json()).toEqual({
        batch_id: part.batchId,
        cancelled: 1,
        transfers: [partIds[0]],
        not_cancelled: [],
      });
      for (const id of [held.batchId, part.batchId]) {
        const retried = await api.call(`/v1/batches/${id}/retry`, { method: 'POST', token: HOOK });
        expect(retried.status).toBe(200);
        expect(await retried.json()).toEqual({ batch_id: id, requeued: 0 });
        expect((await cli(['retry', id])).stdout).toMatch(/re-queued 0 failed/);
      }
      const whole = await api.call(`/v1/batches/${held.batchId}/cancel`, { method: 'POST', token: HOOK });
      expect(await whole.json()).toEqual({ batch_id: held.batchId, cancelled: 0, not_cancelled: [] });
    } finally {
      await api.stop();
    }
    expect(await stack.status(held.batchId)).toMatchObject({ complete: true, counts: { cancelled: 4 } });

    expect((await cli(['resume'])).code).toBe(0);
    const done = await stack.waitComplete(other.batchId, 60_000);
    expect(done.counts.submitted).toBe(3);
    const partDone = await stack.waitComplete(part.batchId, 60_000);
    expect(partDone.counts).toMatchObject({ submitted: 1, cancelled: 1 });
    const recipients = new Set(
      [...cancelled.transfers, ...partDone.transfers.filter((t) => t.state === 'cancelled')].map((t) =>
        t.recipient.toLowerCase(),
      ),
    );
    expect(recipients.size).toBe(5);
    expect((await stack.ledger()).filter((e) => recipients.has(e.recipient.toLowerCase()))).toEqual([]);

    const audit = JSON.parse((await cli(['audit', '--json'])).stdout) as { entries: { action: string }[] };
    const actions = audit.entries.map((e) => e.action);
    for (const a of ['pause', 'cancel', 'resume', 'resolve']) expect(actions).toContain(a);
    await waitFor('nothing left in flight', async () => (await stack.status(other.batchId)).complete);
  });
});
