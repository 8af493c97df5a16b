import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { accessFileEntry, tokenDigest, type Role } from '../../src/domain/access.ts';
import { approvalDigest } from '../../src/domain/approval-digest.ts';
import { buildApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/log/logger.ts';
import { recordApproval } from '../../src/store/approvals.ts';
import type { BatchStatus } from '../../src/present/batch-status.ts';
import type { TransferJobSpec } from '../../src/domain/transfer-jobs.ts';
import { createTransferStore } from '../../src/store/transfer-store.ts';
import { runCli } from '../helpers/cli.ts';
import { csvOf, randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { newPrefix } from './ingest-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'usdc-four-eyes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PEOPLE: Record<string, { roles: Role[]; token: string }> = {
  carol: { roles: ['submitter', 'approver'], token: 'token-of-carol-0123456789abc' },
  alice: { roles: ['approver'], token: 'token-of-alice-0123456789abc' },
  bob: { roles: ['approver'], token: 'token-of-bob-0123456789abcde' },
  'ops-dan': { roles: ['operator'], token: 'token-of-dan-0123456789abcde' },
};
const as = (name: string) => ({ authorization: `Bearer ${PEOPLE[name]?.token}` });

/**
 * docs/access.md "Four eyes": every held batch is released by APPROVALS_REQUIRED approvals from distinct
 * names, never its submitter's, each naming the digest of the rows it reviewed; a digest that is
 * not the batch's now is refused with the current one, and approvals of an earlier one stop counting.
 */
describe('four eyes over HTTP', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  let app: FastifyInstance;
  let prefix: string;
  const jobs: string[] = [];

  const status = async (id: string) =>
    (
      await app.inject({ method: 'GET', url: `/v1/batches/${id}`, headers: as('alice') })
    ).json() as BatchStatus;
  const approve = (id: string, who: string, digest: unknown) =>
    app.inject({
      method: 'POST',
      url: `/v1/batches/${id}/approve`,
      headers: { ...as(who), 'content-type': 'application/json' },
      payload: JSON.stringify({ digest }),
    });
  const post = async (id: string, rows: { id: string; amount: string }[]) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...as('carol'), 'content-type': 'application/json' },
      payload: JSON.stringify({
        batch_id: id,
        transfers: rows.map((r) => ({ ...r, from: 'BASE', to: 'ARB', recipient: randomEvmAddress() })),
      }),
    });
    expect(res.statusCode, res.body).toBe(202);
    return res.json() as { held: boolean };
  };

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
    prefix = newPrefix();
    const file = join(dir, 'access.yaml');
    const entries = Object.entries(PEOPLE).map(([name, p]) =>
      accessFileEntry({ name, roles: p.roles, sha256: tokenDigest(p.token) }),
    );
    writeFileSync(file, `credentials:\n${entries.join('\n')}\n`);
    const config = loadConfig(
      {
        ACCESS_FILE: file,
        QUEUE_PREFIX: prefix,
        APPROVAL_THRESHOLD_USDC: '1',
        APPROVALS_REQUIRED: '2',
        HTTP_AUTH_FAILURE_LIMIT: '0',
      },
      { access: true },
    );
    const producer = {
      async addTransfers(batchId: string, transfers: readonly TransferJobSpec[], round = 0) {
        for (const t of transfers) jobs.push(`${batchId}/${t.transferId}/r${round}`);
      },
    };
    app = await buildApp({ config, redis, producer, logger: createLogger('silent') });
  });
  afterAll(async () => {
    await app?.close();
    redis?.disconnect();
    await suite?.close();
  });

  it('records who submitted, refuses the submitter (403 four_eyes), and releases at the second distinct approver', async () => {
    expect(
      (
        await post('fe-1', [
          { id: 'fe-1-a', amount: '1' },
          { id: 'fe-1-b', amount: '900' },
        ])
      ).held,
    ).toBe(true);
    const held = await status('fe-1');
    expect(held).toMatchObject({ submitted_by: 'carol', held: true, approvals: [], approvals_required: 2 });
    // The digest of the rows as the document shows them, in line order.
    const lines = held.transfers.map((t) => ({
      id: t.id,
      from: t.from,
      to: t.to,
      amount: t.amount,
      recipient: t.recipient,
    }));
    expect(lines.map((l) => l.amount)).toEqual(['1.00', '900.00']);
    expect(held.approval_digest).toBe(approvalDigest(lines));
    const d = held.approval_digest as string;

    const own = await approve('fe-1', 'carol', d);
    expect(own.statusCode).toBe(403);
    expect(own.json()).toMatchObject({
      code: 'four_eyes',
      message: expect.stringContaining('carol submitted batch fe-1'),
    });
    expect((await approve('fe-1', 'alice', undefined)).json()).toMatchObject({
      statusCode: 400,
      approval_digest: d,
    });

    const first = await approve('fe-1', 'alice', d);
    expect(first.json()).toEqual({
      batch_id: 'fe-1',
      released: 0,
      already: false,
      held: true,
      approvals: 1,
      approvals_required: 2,
      approval_digest: d,
    });
    // The same name twice is one approval.
    expect((await approve('fe-1', 'alice', d.toUpperCase())).json()).toMatchObject({
      held: true,
      approvals: 1,
    });
    expect(jobs.filter((j) => j.startsWith('fe-1/'))).toEqual([]);

    const second = await approve('fe-1', 'bob', d);
    expect(second.json()).toMatchObject({ released: 2, held: false, approvals: 2 });
    expect(jobs.filter((j) => j.startsWith('fe-1/')).sort()).toEqual(['fe-1/fe-1-a/r0', 'fe-1/fe-1-b/r0']);
    const after = await status('fe-1');
    expect(after).toMatchObject({ held: false, approval_digest: null });
    expect(after.approvals.map((a) => [a.name, a.digest])).toEqual([
      ['alice', d],
      ['bob', d],
    ]);
    const audit = (
      await app.inject({ method: 'GET', url: '/v1/audit?batch=fe-1', headers: as('alice') })
    ).json() as { entries: { action: string; who: string; detail: Record<string, unknown> }[] };
    // The refused approval is audited too (issue 43: it left no entry).
    expect(
      audit.entries.map((e) => [e.action, e.who, e.detail['approvals'] ?? e.detail['reason'] ?? null]),
    ).toEqual([
      ['approve', 'bob', 2],
      ['approve', 'alice', 1],
      ['approve_refused', 'carol', 'four_eyes'],
      ['enqueue', 'carol', null],
    ]);
  });

  it('refuses a digest the batch changed since (a cancel, a retry) with 409 and the current digest; earlier approvals stop counting', async () => {
    // Finding 3 of issue 33: t1 1.00 queued, t2 900.00 failed; a retry then an approval by id
    // released the 900 USDC the approver never saw.
    await post('fe-2', [
      { id: 't1', amount: '1' },
      { id: 't2', amount: '900' },
      { id: 't3', amount: '5' },
    ]);
    const store = createTransferStore({ redis, prefix });
    await store.transition('fe-2', 't2', {
      expected: ['queued'],
      to: 'failed',
      fields: { error: { code: 'refused', message: 'the service refused it' } },
    });
    const seen = await status('fe-2');
    const d1 = seen.approval_digest as string;
    expect(seen.transfers.filter((t) => t.state === 'queued').map((t) => t.id)).toEqual(['t1', 't3']);
    expect((await approve('fe-2', 'alice', d1)).json()).toMatchObject({ approvals: 1, held: true });

    const retry = await app.inject({ method: 'POST', url: '/v1/batches/fe-2/retry', headers: as('ops-dan') });
    expect(retry.json()).toMatchObject({ requeued: 1 });
    const d2 = (await status('fe-2')).approval_digest as string;
    expect(d2).not.toBe(d1);
    const stale = await approve('fe-2', 'bob', d1);
    expect(stale.statusCode).toBe(409);
    expect(stale.json()).toMatchObject({
      code: 'USDC_APPROVAL_DIGEST_MISMATCH',
      approval_digest: d2,
      digest: d2,
    });
    expect(jobs.filter((j) => j.startsWith('fe-2/'))).toEqual([]);
    const refused = (
      await app.inject({ method: 'GET', url: '/v1/audit?batch=fe-2', headers: as('alice') })
    ).json() as { entries: { action: string; who: string; detail: Record<string, unknown> }[] };
    expect(refused.entries[0]).toMatchObject({
      action: 'approve_refused',
      who: 'bob',
      detail: { reason: 'stale_digest', digest: d1, current_digest: d2 },
    });

    // bob approves what is there now: alice's approval was for other rows, so one is still missing.
    expect((await approve('fe-2', 'bob', d2)).json()).toMatchObject({
      approvals: 1,
      held: true,
      released: 0,
    });
    const cancel = await app.inject({
      method: 'POST',
      url: '/v1/batches/fe-2/cancel',
      headers: { ...as('ops-dan'), 'content-type': 'application/json' },
      payload: JSON.stringify({ transfers: ['t3'] }),
    });
    expect(cancel.json()).toMatchObject({ cancelled: 1 });
    const now = await status('fe-2');
    const d3 = now.approval_digest as string;
    expect(new Set([d1, d2, d3]).size).toBe(3);
    expect((await approve('fe-2', 'alice', d2)).json()).toMatchObject({ approval_digest: d3 });
    expect(now.approvals.map((a) => [a.name, a.digest])).toEqual([
      ['alice', d1],
      ['bob', d2],
    ]);
    // The batch page shows what an approval names, and which approvals no longer count.
    const page = (await app.inject({ method: 'GET', url: '/ui/batches/fe-2', headers: as('bob') })).body;
    expect(/data-approval-digest\s*>([0-9a-f]{64})</.exec(page)?.[1]).toBe(d3);
    expect(page).toMatch(/data-approval-count>0<\/b>\s*of\s*<b data-approvals-required>2</);
    expect(page).toMatch(/data-approval="alice"[\s\S]*?data-void>/);
    expect(page).toContain('data-submitted-by>carol<');
    expect((await approve('fe-2', 'alice', d3)).json()).toMatchObject({ approvals: 1, held: true });
    expect((await approve('fe-2', 'bob', d3)).json()).toMatchObject({
      approvals: 2,
      held: false,
      released: 2,
    });
    // t2 was re-queued by the retry: its job is of round 1.
    expect(jobs.filter((j) => j.startsWith('fe-2/')).sort()).toEqual(['fe-2/t1/r0', 'fe-2/t2/r1']);
    expect((await status('fe-2')).transfers.map((t) => [t.id, t.state])).toEqual([
      ['t1', 'queued'],
      ['t2', 'queued'],
      ['t3', 'cancelled'],
    ]);
    // A cancelled transfer is counted as such in the metrics too.
    const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: as('alice') });
    expect(metrics.body).toMatch(/^usdc_batch_transfers\{state="cancelled"\} 1$/m);
  });

  it('records nothing when the queued rows moved after the digest was read (the release checks them in the same step)', async () => {
    await post('fe-3', [{ id: 'r1', amount: '3' }]);
    const d = (await status('fe-3')).approval_digest as string;
    const rev = (await redis.hget(`${prefix}:batch:fe-3`, 'queued_rev')) ?? '';
    await createTransferStore({ redis, prefix }).transition('fe-3', 'r1', {
      expected: ['queued'],
      to: 'in_progress',
    });
    expect(
      await recordApproval(redis, prefix, 'fe-3', {
        rev,
        name: 'alice',
        at: Date.now(),
        digest: d,
        required: 1,
      }),
    ).toEqual({ status: 'changed', count: 0, required: 0 });
    expect(await redis.hgetall(`${prefix}:batch:fe-3:approvals`)).toEqual({});
  });
});

describe('four eyes through the CLI', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    suite = await redisForSuite();
    env = {
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      APPROVAL_THRESHOLD_USDC: '1',
      APPROVALS_REQUIRED: '2',
    };
  });
  afterAll(async () => {
    await suite?.close();
  });

  it('refuses the submitter (exit 4), a stale digest (exit 3), asks with the rows, total and digest, and releases at the second name', async () => {
    const file = join(dir, 'cli.csv');
    const recipient = randomEvmAddress();
    writeFileSync(
      file,
      csvOf([
        { id: 'c-1', from: 'BASE', to: 'ARB', amount: '12.5', recipient },
        { id: 'c-2', from: 'ETH', to: 'BASE', amount: '7', recipient: randomEvmAddress() },
      ]),
    );
    const enq = await runCli(['enqueue', file, '--batch-id', 'cli-fe', '--json'], {
      ...env,
      USDC_BATCH_OPERATOR: 'ann',
    });
    expect(enq.code, enq.stderr).toBe(0);
    const status = async () =>
      JSON.parse((await runCli(['status', 'cli-fe', '--json'], env)).stdout) as BatchStatus;
    const doc = await status();
    expect(doc).toMatchObject({ submitted_by: 'cli:ann', held: true, approvals_required: 2 });
    const d = doc.approval_digest as string;

    const own = await runCli(['approve', 'cli-fe', '--digest', d], { ...env, USDC_BATCH_OPERATOR: 'ann' });
    expect(own.code).toBe(4);
    expect(own.stderr).toContain('cli:ann submitted batch cli-fe: another approver must approve it');

    const stale = await runCli(['approve', 'cli-fe', '--digest', '0'.repeat(64)], {
      ...env,
      USDC_BATCH_OPERATOR: 'ben',
    });
    expect(stale.code).toBe(3);
    expect(stale.stderr).toContain(`approval_digest ${d}`);

    const text = (await runCli(['status', 'cli-fe'], env)).stdout;
    expect(text).toContain('by cli:ann)');
    expect(text).toContain(`approval_digest: ${d}  approvals: 0 of 2`);
    const no = await runCli(['approve', 'cli-fe'], { ...env, USDC_BATCH_OPERATOR: 'ben' }, { input: 'n\n' });
    expect(no.code).toBe(1);
    expect(no.stdout).toContain('approving releases these 2 transfers');
    expect(no.stdout).toMatch(new RegExp(`c-1\\s+BASE\\s+ARB\\s+12\\.50\\s+${recipient}`));
    expect(no.stdout).toContain('total: 19.50 USDC in 2 transfers');
    expect(no.stdout).toContain(`approval_digest: ${d}`);
    expect(no.stdout).toContain('approve these 2 transfers, 19.50 USDC, as cli:ben? [y/N]');
    expect(no.stdout).toContain('not approved: cli-fe stays held');
    // No answer at all (stdin closed) is no as well.
    expect((await runCli(['approve', 'cli-fe'], { ...env, USDC_BATCH_OPERATOR: 'ben' })).code).toBe(1);
    expect((await status()).approvals).toEqual([]);

    const yes = await runCli(['approve', 'cli-fe'], { ...env, USDC_BATCH_OPERATOR: 'ben' }, { input: 'y\n' });
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toContain('approved cli-fe as cli:ben (1 of 2 approvals): it stays held');
    const last = await runCli(['approve', 'cli-fe', '--digest', d], { ...env, USDC_BATCH_OPERATOR: 'cy' });
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout).toContain('released 2 transfers');
    const done = await status();
    expect(done.held).toBe(false);
    expect(done.approvals.map((a) => a.name)).toEqual(['cli:ben', 'cli:cy']);
    const audit = JSON.parse((await runCli(['audit', '--batch', 'cli-fe', '--json'], env)).stdout) as {
      entries: { action: string; who: string }[];
    };
    expect(audit.entries.map((e) => `${e.action} ${e.who}`)).toEqual([
      'approve cli:cy',
      'approve cli:ben',
      'approve_refused cli:ben',
      'approve_refused cli:ann',
      'enqueue cli:ann',
    ]);
  });

  it('four eyes over the address book: an address its submitter added is new for their batch until an approval vouches for it', async () => {
    // Issue 43: one name holding both submitter and approver added an address, then paid it unheld.
    const bookEnv = {
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      NEW_RECIPIENT_POLICY: 'hold',
      APPROVER_TOKEN: 'approver-token-0123456789abcdef',
    };
    const as = (name: string) => ({ ...bookEnv, USDC_BATCH_OPERATOR: name });
    const mule = randomEvmAddress();
    expect((await runCli(['recipients', 'add', mule, '--label', 'mine'], as('ann'))).code).toBe(0);
    const enqueue = async (name: string, id: string) => {
      const file = join(dir, `${id}.csv`);
      writeFileSync(file, csvOf([{ id, from: 'BASE', to: 'ARB', amount: '25', recipient: mule }]));
      const res = await runCli(['enqueue', file, '--batch-id', id, '--json'], as(name));
      expect(res.code, res.stderr).toBe(0);
      return JSON.parse(res.stdout) as { held: boolean; held_reason: string | null };
    };
    // ann added it: for ann's batch it is still a new recipient, and the batch is held.
    const own = await enqueue('ann', 'book-ann-1');
    expect(own.held).toBe(true);
    expect(own.held_reason).toMatch(
      /new recipients: 1 row pays 1 address \(line 2\) not in the address book/,
    );
    expect((await runCli(['approve', 'book-ann-1', '--digest', '0'.repeat(64)], as('ann'))).code).toBe(4);
    // Someone else's batch to it runs: another name added it.
    expect((await enqueue('bo', 'book-bo-1')).held).toBe(false);
    // An approval by a second person vouches for it: ann's next batch to it is not held.
    const doc = JSON.parse((await runCli(['status', 'book-ann-1', '--json'], bookEnv)).stdout) as BatchStatus;
    const approved = await runCli(
      ['approve', 'book-ann-1', '--digest', doc.approval_digest as string],
      as('cy'),
    );
    expect(approved.code, approved.stderr).toBe(0);
    const list = JSON.parse((await runCli(['recipients', 'list', '--json'], bookEnv)).stdout) as {
      recipients: Record<string, unknown>[];
    };
    expect(list.recipients.find((r) => r['address'] === mule)).toMatchObject({
      added_by: 'cli:ann',
      label: 'mine',
    });
    expect((await enqueue('ann', 'book-ann-2')).held).toBe(false);
  });
});
