import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpawnedProcess } from '../../support/cli.ts';
import { metricKeys } from '../../src/metrics/worker-metrics.ts';
import { readAudit } from '../../src/store/audit.ts';
import { readScreening } from '../../src/store/screening-state.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { checkLedger, startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress, type Row } from '../helpers/fixtures.ts';

/*
 * docs/promises.md, promise 6 (docs/screening.md): with SCREENING_LISTS, a listed recipient is an
 * invalid row at enqueue; a list grown after enqueue rejects the rows it names before anything is
 * signed for them (nothing paid to them, the rest paid); a stale list makes transfers wait `queued`
 * with the reason until a fresh list is loaded — and a worker killed (-9) during that reload loses
 * nothing.
 */

const DAY = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('sanctions lists', () => {
  let stack: Stack;
  let worker: SpawnedProcess;
  let list: string;
  const prefix = () => stack.env['QUEUE_PREFIX'] as string;

  /** Writes the plain list, dated `date`, naming `addresses`. */
  const writeList = (addresses: readonly string[], date = day(Date.now())) =>
    writeFileSync(list, `# date: ${date}\n${addresses.join('\n')}\n`);

  /** Has the worker read the list again (SIGHUP) and wait until it publishes `evm` EVM addresses dated `date`. */
  async function reloadWorker(evm: number, date: string): Promise<void> {
    worker.child.kill('SIGHUP');
    await waitFor(`the worker to reload its list (${evm} addresses of ${date})`, async () => {
      const s = await readScreening(stack.client, prefix());
      return s?.lists[0]?.evm === evm && s.lists[0].date === date ? true : undefined;
    });
  }

  const rowsTo = (tag: string, recipients: readonly string[]): Row[] =>
    recipients.map((recipient, i) => ({
      id: `${tag}-${i}`,
      from: 'BASE',
      to: 'ARB',
      amount: '2.50',
      recipient,
    }));

  beforeAll(async () => {
    stack = await startStack({ latencyMs: 5 });
    list = join(stack.dir, 'sanctions.txt');
    writeList([]);
    // The CLI and the worker screen with the same settings (no control drift).
    stack.env['SCREENING_LISTS'] = list;
    stack.env['SCREENING_MAX_AGE'] = '3d';
    worker = stack.startWorker();
    await stack.workersReady();
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('refuses a listed recipient at enqueue, whatever its case, naming its line, the list and its date', async () => {
    const listed = randomEvmAddress();
    writeList([listed.toLowerCase()]);
    const rows = rowsTo('enq', [randomEvmAddress(), listed.toUpperCase().replace('0X', '0x')]);
    const res = await stack.enqueue(rows);
    expect(res.code, res.stderr).toBe(1);
    const doc = JSON.parse(res.stdout) as { errors: { line: number; column: string; message: string }[] };
    expect(doc.errors).toEqual([
      {
        line: 3,
        column: 'recipient',
        message: expect.stringMatching(new RegExp(`is on the sanctions list ${list} of ${day(Date.now())}`)),
      },
    ]);
    const check = await runCli(['screening', 'check', listed], stack.env);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('LISTED');
    writeList([]);
  });

  it('rejects before signing the rows a list names once it grew after enqueue: nothing is paid to them', async () => {
    const named = [randomEvmAddress(), randomEvmAddress()];
    const others = [randomEvmAddress(), randomEvmAddress(), randomEvmAddress()];
    expect((await runCli(['pause'], stack.env)).code).toBe(0);
    const enq = await stack.enqueue(
      rowsTo('grown', [others[0], named[0], others[1], named[1], others[2]] as string[]),
    );
    expect(enq.code, enq.stderr).toBe(0);
    // The list grows while the batch waits: in another case than the rows'.
    const today = day(Date.now());
    writeList(
      named.map((a) => a.toLowerCase()),
      today,
    );
    await reloadWorker(2, today);
    expect((await runCli(['resume'], stack.env)).code).toBe(0);

    const doc = await stack.waitComplete(enq.batchId);
    const byRecipient = new Map(doc.transfers.map((t) => [t.recipient.toLowerCase(), t]));
    for (const a of named) {
      const t = byRecipient.get(a.toLowerCase());
      expect(t?.state).toBe('rejected');
      expect(t?.error?.code).toBe('recipient_sanctioned');
      expect(t?.error?.message).toContain(`sanctions list ${list} of ${today}`);
      expect(t?.intent_id).toBeNull();
    }
    for (const a of others) expect(byRecipient.get(a.toLowerCase())?.state).toBe('submitted');
    // The service paid the others once each and never the listed ones.
    const ledger = await stack.ledger();
    expect(checkLedger(doc, ledger).problems).toEqual([]);
    const paid = new Set(ledger.map((e) => e.recipient.toLowerCase()));
    for (const a of named) expect(paid.has(a.toLowerCase())).toBe(false);
    expect(doc.screening).toEqual({
      lists: [{ name: list, date: today, addresses: 2 }],
      stale: false,
      onchain: true,
    });

    // Each refusal audited, `who` the list, and counted.
    const audit = await readAudit(stack.client, prefix(), { batch: enq.batchId });
    const refusals = audit.filter((e) => e.action === 'screening_refused');
    expect(refusals.map((e) => e.who)).toEqual([`list:${list}`, `list:${list}`]);
    await waitFor('the refusals to be counted', async () =>
      Number(await stack.client.hget(metricKeys(prefix()).counters, 'screening_refusals|list')) === 2
        ? true
        : undefined,
    );
  });

  it('holds every transfer queued while the list is stale, and a worker killed during the fresh reload loses nothing', async () => {
    const old = day(Date.now() - 10 * DAY);
    writeList([], old);
    await reloadWorker(0, old);
    const recipients = [randomEvmAddress(), randomEvmAddress()];
    const enq = await stack.enqueue(rowsTo('stale', recipients));
    expect(enq.code, enq.stderr).toBe(0);
    const waiting = await waitFor('the transfers to wait for a fresh list', async () => {
      const doc = await stack.status(enq.batchId);
      return doc.transfers.every(
        (t) => t.state === 'queued' && /screening is stale/.test(t.wait_reason ?? ''),
      )
        ? doc
        : undefined;
    });
    expect(waiting.screening.stale).toBe(true);
    expect(waiting.transfers.every((t) => t.intent_id === null)).toBe(true);

    // A fresh list; the worker is killed as it reloads; a new worker starts with the fresh list.
    writeList([]);
    worker.child.kill('SIGHUP');
    worker.child.kill('SIGKILL');
    worker = stack.startWorker();
    const doc = await stack.waitComplete(enq.batchId);
    expect(doc.counts.submitted).toBe(2);
    expect(doc.screening.stale).toBe(false);
    expect(checkLedger(doc, await stack.ledger()).problems).toEqual([]);
  });
});
