import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCli } from '../helpers/approve.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { buildApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { LedgerEntry } from '../../src/sandbox/sandbox.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { jobsOfBatch, startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, randomEvmAddress, randomSolanaAddress, type Row } from '../helpers/fixtures.ts';
import { startPrivateRedis } from '../helpers/redis.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

const HOOK = 'hook-token-recipients-0123456789';
const APPROVER = 'approver-token-recipients-987654';

type EnqueueDoc = {
  batch_id: string | null;
  held: boolean;
  held_reason: string | null;
  accepted: number;
  rejected: number;
  errors: { line: number | null; column: string | null; message: string }[];
};
type AuditDoc = { entries: { action: string; who: string; batch: string | null; detail: unknown }[] };

/** An audit entry's detail as text, whether it is a sentence or an object. */
const detailText = (detail: unknown): string =>
  typeof detail === 'string' ? detail : JSON.stringify(detail);
type BookDoc = {
  recipients: { address: string; family: string; label: string | null; added_by: string; via: string }[];
};

/**
 * The sandbox's payments of one batch, by transfer (its Idempotency-Key is `<batch>/<transfer>/<gen>`):
 * the same recipients are paid by several payrolls here, so rows are told apart by their key.
 */
function paymentsOf(ledger: readonly LedgerEntry[], batchId: string): Map<string, LedgerEntry[]> {
  const out = new Map<string, LedgerEntry[]>();
  for (const e of ledger) {
    const [batch, transfer] = (e.idempotency_key ?? '').split('/');
    if (batch !== batchId || !transfer) continue;
    out.set(transfer, [...(out.get(transfer) ?? []), e]);
  }
  return out;
}

/** Each transfer of the batch paid exactly once, to its recipient, under the intent it records. */
function expectPaidOnce(doc: BatchStatus, ledger: readonly LedgerEntry[]): void {
  const paid = paymentsOf(ledger, doc.batch_id);
  expect([...paid.keys()].sort()).toEqual(doc.transfers.map((t) => t.id).sort());
  for (const t of doc.transfers) {
    const entries = paid.get(t.id) ?? [];
    expect(entries, t.id).toHaveLength(1);
    expect(entries[0]?.recipient.toLowerCase()).toBe(t.recipient.toLowerCase());
    expect(entries[0]?.intent_id).toBe(t.intent_id);
  }
}

/**
 * The address book and NEW_RECIPIENT_POLICY (issue 18), through the real CLI and `serve` against
 * the sandbox with a worker: the money is checked in the sandbox's ledger.
 */
describe('known recipients: the address book and holds on new addresses', () => {
  let stack: Stack;
  let api: ServeProcess;
  let n = 0;
  const cli = (args: string[], env: Record<string, string> = stack.env) => runCli(args, env);
  const file = (name: string, text: string) => {
    const path = join(stack.dir, name);
    writeFileSync(path, text);
    return path;
  };
  const enqueue = async (rows: Row[], args: string[] = [], env: Record<string, string> = stack.env) => {
    const res = await cli(['enqueue', file(`e${n++}.csv`, csvOf(rows)), '--json', ...args], env);
    return { ...res, doc: JSON.parse(res.stdout) as EnqueueDoc };
  };
  /** Another prefix on the same Redis: batches there are never taken by the worker. */
  const isolated = (extra: Record<string, string> = {}) => ({
    ...stack.env,
    QUEUE_PREFIX: `${stack.env['QUEUE_PREFIX']}x${n++}`,
    ...extra,
  });

  // The payroll's people: two EVM recipients, one on Solana, one more EVM.
  const people = {
    ana: randomEvmAddress(),
    bo: randomEvmAddress(),
    chi: randomSolanaAddress(),
    dee: randomEvmAddress(),
  };
  const payroll = (tag: string, bo = people.bo): Row[] => [
    { id: `${tag}-ana`, from: 'BASE', to: 'ARB', amount: '120.50', recipient: people.ana },
    { id: `${tag}-bo`, from: 'ETH', to: 'BASE', amount: '80', recipient: bo },
    { id: `${tag}-chi`, from: 'ARB', to: 'SOLANA', amount: '64.25', recipient: people.chi },
    { id: `${tag}-dee`, from: 'SOLANA', to: 'POLYGON', amount: '33', recipient: people.dee },
  ];

  beforeAll(async () => {
    stack = await startStack({
      env: { NEW_RECIPIENT_POLICY: 'hold', APPROVER_TOKEN: APPROVER, HOOK_TOKEN: HOOK },
    });
    api = await startServe(stack.env);
    stack.startWorker();
  });
  afterAll(async () => {
    await api?.stop();
    await stack?.stop();
  });

  it('runs a payroll of known recipients; the same file with one address changed is held, sends nothing until approved, then pays once', async () => {
    const book = file(
      'book.csv',
      ['Label,Address', ...Object.entries(people).map(([name, a]) => `${name},${a}`)].join('\r\n'),
    );
    // Imported by another name than the payroll's submitter (four eyes over the address book).
    const imported = await cli(['recipients', 'import', book], {
      ...stack.env,
      USDC_BATCH_OPERATOR: 'book-keeper',
    });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toMatch(/imported 4 addresses: 4 added, 0 already in the book/);

    const first = await enqueue(payroll('jan'), ['--batch-id', 'jan']);
    expect(first.doc).toMatchObject({ held: false, held_reason: null, accepted: 4 });
    const jan = await stack.waitComplete('jan', 60_000);
    expect(jan.counts.submitted).toBe(4);
    expect(jan.transfers.map((t) => t.new_recipient)).toEqual([false, false, false, false]);

    // A spoofed e-mail changed Bo's wallet.
    const attacker = randomEvmAddress();
    const dry = await cli([
      'enqueue',
      file('feb-dry.csv', csvOf(payroll('feb', attacker))),
      '--dry-run',
      '--json',
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      new_recipients: [{ address: attacker, rows: 1, amount: '80.00', removed: false }],
    });
    const human = await cli(['enqueue', file('feb-dry2.csv', csvOf(payroll('feb', attacker))), '--dry-run']);
    expect(human.stdout).toMatch(
      /new recipients: 1 not in the address book \(NEW_RECIPIENT_POLICY=hold: the batch would be held/,
    );
    expect(human.stdout).toContain(attacker);

    const second = await enqueue(payroll('feb', attacker), ['--batch-id', 'feb']);
    expect(second.code).toBe(0);
    expect(second.doc.held).toBe(true);
    expect(second.doc.held_reason).toMatch(
      /new recipients: 1 row pays 1 address \(line 3\) not in the address book \(NEW_RECIPIENT_POLICY=hold\)/,
    );
    const waiting = await stack.status('feb');
    expect(waiting).toMatchObject({ held: true, complete: false, counts: { queued: 4 } });
    expect(waiting.transfers.map((t) => [t.id, t.new_recipient])).toEqual([
      ['feb-ana', false],
      ['feb-bo', true],
      ['feb-chi', false],
      ['feb-dee', false],
    ]);
    const statusText = (await cli(['status', 'feb'])).stdout;
    expect(statusText).toMatch(/HELD for approval: new recipients: 1 row/);
    expect(statusText).toMatch(/feb-bo .* NEW .* queued/);
    const csv = parse((await cli(['export', 'feb'])).stdout, { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => r['new_recipient'])).toEqual(['false', 'true', 'false', 'false']);
    expect(await jobsOfBatch(stack.client, stack.env['QUEUE_PREFIX'] as string, 'feb')).toEqual([]);

    // The next known payroll goes through the worker meanwhile; by then nothing of the held one went.
    expect((await enqueue(payroll('mar'), ['--batch-id', 'mar'])).doc.held).toBe(false);
    expect((await stack.waitComplete('mar', 60_000)).counts.submitted).toBe(4);
    const before = await stack.ledger();
    expect(paymentsOf(before, 'feb').size).toBe(0);
    expect(before.filter((e) => e.recipient.toLowerCase() === attacker.toLowerCase())).toEqual([]);

    // Approving it (the approver's token) pays each row once, and puts the address in the book.
    const digest = (await stack.status('feb')).approval_digest;
    const approve = (token: string) =>
      api.call('/v1/batches/feb/approve', {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ digest }),
      });
    expect((await approve(HOOK)).status).toBe(403);
    const ok = await approve(APPROVER);
    expect(await ok.json()).toMatchObject({ batch_id: 'feb', released: 4, already: false, held: false });
    const feb = await stack.waitComplete('feb', 60_000);
    expect(feb).toMatchObject({ held: false, held_reason: null, counts: { submitted: 4 } });
    expectPaidOnce(feb, await stack.ledger());
    const listed = JSON.parse((await cli(['recipients', 'list', '--json'])).stdout) as BookDoc;
    expect(listed.recipients.find((r) => r.address === attacker)).toMatchObject({
      added_by: 'approver',
      via: 'approve:feb',
      family: 'evm',
    });
    expect(listed.recipients.find((r) => r.address === people.chi)).toMatchObject({
      family: 'solana',
      label: 'chi',
    });

    // Now known: the next payroll to it runs without a hold.
    const apr = await enqueue(payroll('apr', attacker), ['--batch-id', 'apr']);
    expect(apr.doc.held).toBe(false);
    expectPaidOnce(await stack.waitComplete('apr', 60_000), await stack.ledger());
  });

  it('cancel --transfer cancels the suspicious row of a held batch, the rest stays held, and approval vouches only for the rest', async () => {
    const [fraud, newHire] = [randomEvmAddress(), randomEvmAddress()];
    const rows: Row[] = [
      { id: 'may-ana', from: 'BASE', to: 'ARB', amount: '10', recipient: people.ana },
      { id: 'may-fraud', from: 'BASE', to: 'ARB', amount: '900', recipient: fraud },
      { id: 'may-new', from: 'ARB', to: 'ETH', amount: '15', recipient: newHire },
    ];
    expect((await enqueue(rows, ['--batch-id', 'may'])).doc.held).toBe(true);
    const cancel = await cli(['cancel', 'may', '--transfer', 'may-fraud']);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/cancelled 1 unsent transfer of may: may-fraud/);
    expect(await stack.status('may')).toMatchObject({ held: true, counts: { queued: 2, cancelled: 1 } });
    expect((await cli(['cancel', 'may', '--transfer', 'no-such-row'])).code).toBe(2);

    expect((await approveCli('may', stack.env)).stdout).toMatch(/released 2 transfer/);
    const may = await stack.waitComplete('may', 60_000);
    expect(may.transfers.map((t) => [t.id, t.state, t.error?.code ?? null])).toEqual([
      ['may-ana', 'submitted', null],
      ['may-fraud', 'cancelled', 'cancelled'],
      ['may-new', 'submitted', null],
    ]);
    const ledger = await stack.ledger();
    expect(ledger.filter((e) => e.recipient.toLowerCase() === fraud.toLowerCase())).toEqual([]);
    expect(paymentsOf(ledger, 'may').get('may-new')).toHaveLength(1);
    const listed = JSON.parse((await cli(['recipients', 'list', '--json'])).stdout) as BookDoc;
    expect(listed.recipients.map((r) => r.address)).toContain(newHire);
    expect(listed.recipients.map((r) => r.address)).not.toContain(fraud);
    // A row already paid is not cut off.
    const late = await cli(['cancel', 'may', '--transfer', 'may-ana']);
    expect(late.code).toBe(1);
    expect(late.stdout).toMatch(/may-ana is submitted, not queued/);
  });

  it('takes an approver to change the book over HTTP, never the hook credential, and audits every change with its actor', async () => {
    const address = randomEvmAddress();
    const post = (token: string | undefined, body: unknown) =>
      api.call('/v1/recipients', {
        method: 'POST',
        token,
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
    expect((await post(undefined, { address })).status).toBe(401);
    expect((await post(HOOK, { address })).status).toBe(403);
    const created = await post(APPROVER, { address, label: 'vendor' });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ address, family: 'evm', added: true });
    expect((await post(APPROVER, { address: 'not-an-address' })).status).toBe(422);
    const bulk = await api.call('/v1/recipients', {
      method: 'POST',
      token: APPROVER,
      body: 'address,label\n' + `${randomSolanaAddress()},sol vendor\n0x123,bad\n`,
      headers: { 'content-type': 'text/csv' },
    });
    expect(bulk.status).toBe(422);
    expect(await bulk.json()).toMatchObject({ errors: [{ line: 3, column: 'address' }] });

    const listed = await api.call('/v1/recipients', { token: HOOK });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as BookDoc).recipients.find((r) => r.address === address)).toMatchObject({
      label: 'vendor',
      added_by: 'approver',
      via: 'add',
    });
    expect((await api.call(`/v1/recipients/${address}`, { method: 'DELETE', token: HOOK })).status).toBe(403);
    const removed = await api.call(`/v1/recipients/${address.toLowerCase()}`, {
      method: 'DELETE',
      token: APPROVER,
    });
    expect(await removed.json()).toMatchObject({ address, removed: true, was_in_book: true });

    // From the CLI: add, remove; the import of the first test is there too.
    const other = randomSolanaAddress();
    expect((await cli(['recipients', 'add', other, '--label', 'ops'])).code).toBe(0);
    expect((await cli(['recipients', 'remove', other])).code).toBe(0);
    const audit = JSON.parse((await cli(['audit', '--json'])).stdout) as AuditDoc;
    const changes = audit.entries
      .filter((e) => e.action.startsWith('recipient_'))
      .map((e) => [
        e.action,
        e.who,
        detailText(e.detail).includes(address) || detailText(e.detail).includes(other) ? 'named' : 'other',
      ]);
    expect(changes.slice(0, 4)).toEqual([
      ['recipient_remove', expect.stringMatching(/^cli:/), 'named'],
      ['recipient_add', expect.stringMatching(/^cli:/), 'named'],
      ['recipient_remove', 'approver', 'named'],
      ['recipient_add', 'approver', 'named'],
    ]);
    expect(changes.at(-1)).toEqual(['recipient_import', expect.stringMatching(/^cli:/), 'other']);
    const approve = audit.entries.find((e) => e.action === 'approve' && e.batch === 'feb');
    expect(approve?.who).toBe('approver');
    // The approval says it added a recipient to the book (released 4, added 1).
    expect(detailText(approve?.detail)).toMatch(/released\D{1,4}4\D.*\D1\D/);
    expect(detailText(approve?.detail)).toMatch(/recipient/);
    for (const e of audit.entries) expect(JSON.stringify(e)).not.toContain(APPROVER);

    // The hook credential never keeps the book, even with no approver configured (policy allow):
    // the book belongs to approvers (docs/access.md).
    const prefix = `${stack.env['QUEUE_PREFIX']}h`;
    const app = await buildApp({
      config: loadConfig({ HOOK_TOKEN: HOOK, QUEUE_PREFIX: prefix }),
      redis: stack.client,
      producer: { addTransfers: async () => {} },
      logger: createLogger('silent'),
    });
    try {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/recipients',
        headers: { authorization: `Bearer ${HOOK}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          recipients: [{ address: randomEvmAddress() }, { address: randomSolanaAddress() }],
        }),
      });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toMatchObject({ code: 'USDC_HTTP_FORBIDDEN', roles: ['approver'] });
    } finally {
      await app.close();
    }
  });

  it('reject refuses each row paying an address not in the book, at its line; --skip-invalid enqueues the rest', async () => {
    const env = isolated({ NEW_RECIPIENT_POLICY: 'reject' });
    const known = randomEvmAddress();
    // Added by someone else than the batches' submitter (four eyes over the address book).
    const keeper = { ...env, USDC_BATCH_OPERATOR: 'book-keeper' };
    expect((await cli(['recipients', 'add', known], keeper)).code).toBe(0);
    const stranger = randomEvmAddress();
    const rows: Row[] = [
      { id: 'r1', from: 'BASE', to: 'ARB', amount: '10', recipient: known },
      { id: 'r2', from: 'BASE', to: 'ARB', amount: '11', recipient: stranger },
      { id: 'r3', from: 'ETH', to: 'ARB', amount: '12', recipient: known },
    ];
    const refused = await enqueue(rows, [], env);
    expect(refused.code).toBe(1);
    expect(refused.doc).toMatchObject({ batch_id: null, accepted: 0, rejected: 1 });
    expect(refused.doc.errors).toEqual([
      {
        line: 3,
        column: 'recipient',
        message: `recipient ${stranger} is not in the address book (NEW_RECIPIENT_POLICY=reject)`,
      },
    ]);
    const human = await cli(['enqueue', file('rej.csv', csvOf(rows))], env);
    expect(human.stdout).toMatch(
      /line 3, column recipient: recipient 0x[0-9a-fA-F]{40} is not in the address book/,
    );
    const skipped = await enqueue(rows, ['--skip-invalid'], env);
    expect(skipped.code).toBe(0);
    expect(skipped.doc).toMatchObject({ accepted: 2, rejected: 1, held: false });
    expect(skipped.doc.errors.map((e) => [e.line, e.column])).toEqual([[3, 'recipient']]);
  });

  it('under allow flags new recipients, holds past NEW_RECIPIENT_MAX_USDC across unfinished batches, and holds a removed address every time until it is added again', async () => {
    const env = isolated({ NEW_RECIPIENT_POLICY: 'allow', NEW_RECIPIENT_MAX_USDC: '1000' });
    const status = async (id: string) =>
      JSON.parse((await cli(['status', id, '--json'], env)).stdout) as BatchStatus;
    const newcomer = randomEvmAddress();
    const row = (id: string, amount: string, recipient = newcomer): Row => ({
      id,
      from: 'BASE',
      to: 'ARB',
      amount,
      recipient,
    });

    const one = await enqueue([row('c1', '999')], [], env);
    expect(one.doc.held).toBe(false);
    expect((await status(one.doc.batch_id as string)).transfers[0]?.new_recipient).toBe(true);
    // The same new address again, in another batch: 1,998 unfinished is past the cap.
    const two = await enqueue([row('c2', '999')], [], env);
    expect(two.doc.held).toBe(true);
    expect(two.doc.held_reason).toMatch(
      new RegExp(
        `NEW_RECIPIENT_MAX_USDC: 1 new recipient\\(s\\) would be paid more than 1000(\\.0+)? USDC in all: ${newcomer} \\(1998(\\.0+)? USDC\\)`,
      ),
    );
    // A first payment above the cap is held by itself; one to a known address is not.
    expect((await enqueue([row('c3', '1000.01', randomEvmAddress())], [], env)).doc.held).toBe(true);
    const known = randomEvmAddress();
    // Added by someone else than the batches' submitter (four eyes over the address book).
    const keeper = { ...env, USDC_BATCH_OPERATOR: 'book-keeper' };
    expect((await cli(['recipients', 'add', known], keeper)).code).toBe(0);
    expect((await enqueue([row('c4', '5000', known)], [], env)).doc.held).toBe(false);

    // Removed (a reported fraud): held even under allow, every time, approval or not.
    expect((await cli(['recipients', 'remove', known], env)).stdout).toMatch(/^removed 0x/);
    const after = await enqueue([row('c5', '5', known)], [], env);
    expect(after.doc.held).toBe(true);
    expect(after.doc.held_reason).toMatch(
      /removed recipients: 1 row pays 1 address \(line 2\) removed from the address book/,
    );
    expect((await approveCli(after.doc.batch_id as string, env)).code).toBe(0);
    const book = JSON.parse((await cli(['recipients', 'list', '--json'], env)).stdout) as BookDoc;
    expect(book.recipients.map((r) => r.address)).not.toContain(known);
    expect((await enqueue([row('c6', '6', known)], [], env)).doc.held).toBe(true);
    expect((await cli(['recipients', 'add', known], keeper)).stdout).toMatch(/it had been removed/);
    expect((await enqueue([row('c7', '7', known)], [], env)).doc.held).toBe(false);
  });

  it('NEW_RECIPIENT_MAX_USDC caps what a new address is paid in all, finished batches included, and holds exactly one of two racing enqueues', async () => {
    // Issue 43: four batches of 90 to one never-approved address under a cap of 100 were all paid.
    const env = isolated({ NEW_RECIPIENT_POLICY: 'allow', NEW_RECIPIENT_MAX_USDC: '100' });
    const worker = stack.startWorker(env);
    try {
      const newcomer = randomEvmAddress();
      const row = (id: string, amount: string, recipient = newcomer): Row => ({
        id,
        from: 'BASE',
        to: 'ARB',
        amount,
        recipient,
      });
      const first = await enqueue([row('cap-1', '90')], [], env);
      expect(first.doc.held).toBe(false);
      const done = await waitFor(
        'the first batch to complete',
        async () => {
          const doc = JSON.parse(
            (await cli(['status', first.doc.batch_id as string, '--json'], env)).stdout,
          ) as BatchStatus;
          return doc.complete ? doc : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 250 },
      );
      expect(done.counts.submitted).toBe(1);
      // Finished, it still counts: 90 paid + 90 more passes the cap of 100.
      const second = await enqueue([row('cap-2', '90')], [], env);
      expect(second.doc.held).toBe(true);
      expect(second.doc.held_reason).toMatch(
        new RegExp(`would be paid more than 100(\\.0+)? USDC in all: ${newcomer} \\(180(\\.0+)? USDC\\)`),
      );
      const paid = (await stack.ledger()).filter((e) => e.recipient.toLowerCase() === newcomer.toLowerCase());
      expect(paid).toHaveLength(1);

      // Two enqueues of 60 to another new address at once: one sees the other, exactly one is held.
      const other = randomEvmAddress();
      const racing = await Promise.all([
        enqueue([row('race-a', '60', other)], [], env),
        enqueue([row('race-b', '60', other)], [], env),
      ]);
      expect(racing.map((r) => r.doc.held).sort()).toEqual([false, true]);
    } finally {
      await worker.stop();
    }
  });

  it('makes hold and reject without APPROVER_TOKEN a configuration error naming the variable (exit 2)', async () => {
    for (const policy of ['hold', 'reject']) {
      const env: Record<string, string> = { ...stack.env, NEW_RECIPIENT_POLICY: policy };
      delete env['APPROVER_TOKEN'];
      for (const args of [
        ['recipients', 'list'],
        ['enqueue', file('x.csv', csvOf(payroll('x')))],
      ]) {
        const res = await cli(args, env);
        expect(res.code).toBe(2);
        expect(res.stderr).toMatch(
          new RegExp(`APPROVER_TOKEN: is required with NEW_RECIPIENT_POLICY=${policy}`),
        );
      }
    }
  });
});

describe('recipients import of a large address book', () => {
  it('imports 10,000 addresses with a few pipelined writes, all or none', async () => {
    const redis = await startPrivateRedis({ durable: false });
    const client = new Redis(redis.url);
    const dir = mkdtempSync(join(tmpdir(), 'usdc-book-'));
    const path = join(dir, 'book.csv');
    try {
      const lines = ['address,label'];
      for (let i = 0; i < 10_000; i++) {
        lines.push(`${i % 100 === 0 ? randomSolanaAddress() : randomEvmAddress()},employee ${i}`);
      }
      writeFileSync(path, `${lines.join('\n')}\n`);
      const env = { REDIS_URL: redis.url, QUEUE_PREFIX: 'big' };
      const calls = async () => {
        const info = await client.info('commandstats');
        const count = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
        return count('hset') + count('hmget') + count('hdel');
      };
      const before = await calls();
      const res = await runCli(['recipients', 'import', path], env);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(/imported 10000 addresses: 10000 added, 0 already in the book/);
      // A thousand addresses per command: a read, a write and a tombstone clear per thousand.
      expect((await calls()) - before).toBeLessThanOrEqual(30);
      expect(await client.hlen('big:recipients')).toBe(10_000);

      // One bad line refuses the file: nothing of it is written.
      lines[5001] = '0xnot-an-address,oops';
      writeFileSync(path, `${lines.join('\n')}\n`);
      const bad = await runCli(['recipients', 'import', path], { ...env, QUEUE_PREFIX: 'big2' });
      expect(bad.code).toBe(1);
      expect(bad.stdout).toMatch(/line 5002, column address: "0xnot-an-address" is not an EVM address/);
      expect(await client.exists('big2:recipients')).toBe(0);
    } finally {
      client.disconnect();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
