import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { auditLine, auditLineHash, canonicalJson, GENESIS_HASH } from '../../src/domain/audit-chain.ts';
import { buildApp } from '../../src/http/app.ts';
import { createLogger } from '../../src/log/logger.ts';
import { recordAudit } from '../../src/store/audit.ts';
import { startAuditHeadLog } from '../../src/store/audit-head.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { csvOf, randomEvmAddress } from '../helpers/fixtures.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { newPrefix } from './ingest-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'usdc-audit-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Line = Record<string, unknown> & { prev: string; hash: string; action: string; who: string };
/** The heads a process logged on stderr (`audit log head`, JSON lines). */
const logHeads = (stderr: string): unknown[] =>
  stderr
    .split('\n')
    .filter((l) => l.includes('"audit log head"'))
    .map((l) => (JSON.parse(l) as { head: unknown }).head);
const linesOf = (file: string): Line[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);

describe('the audit chain (docs/audit.md)', () => {
  it('hashes the canonical JSON of a line without its hash: sorted keys, no whitespace', () => {
    const fields = {
      id: '1700000000000-0',
      at: '2023-11-14T22:13:20.000Z',
      who: 'cli:ann',
      action: 'approve',
      batch: 'b-1',
      detail: { released: 2, digest: 'ab', note: 'é "q"' },
    };
    // Written out by hand, as Python's json.dumps(sort_keys=True, separators=(',', ':'), ensure_ascii=False) does.
    const canonical =
      '{"action":"approve","at":"2023-11-14T22:13:20.000Z","batch":"b-1","detail":{"digest":"ab","note":"é \\"q\\"","released":2},"id":"1700000000000-0","prev":"' +
      GENESIS_HASH +
      '","who":"cli:ann"}';
    expect(canonicalJson({ ...fields, prev: GENESIS_HASH })).toBe(canonical);
    const expected = createHash('sha256').update(canonical, 'utf8').digest('hex');
    const line = JSON.parse(auditLine(fields, GENESIS_HASH)) as Line;
    expect(line.hash).toBe(expected);
    expect(auditLineHash(line)).toBe(expected);
    expect(Object.keys(line)).toEqual(['id', 'at', 'who', 'action', 'batch', 'detail', 'prev', 'hash']);
  });
});

describe('AUDIT_LOG_FILE through the CLI and the API', () => {
  let suite: Awaited<ReturnType<typeof redisForSuite>>;
  let redis: Redis;
  let env: Record<string, string>;
  let file: string;

  beforeAll(async () => {
    suite = await redisForSuite();
    redis = new Redis(suite.url);
    file = join(dir, 'audit.jsonl');
    env = {
      REDIS_URL: suite.url,
      QUEUE_PREFIX: newPrefix(),
      AUDIT_LOG_FILE: file,
      USDC_BATCH_OPERATOR: 'ann',
    };
  });
  afterAll(async () => {
    redis?.disconnect();
    await suite?.close();
  });

  it('appends each action as a chained line before it returns, records no no-op, and --verify checks the chain', async () => {
    const csv = join(dir, 'b.csv');
    writeFileSync(
      csv,
      csvOf([{ id: 'af-1', from: 'BASE', to: 'ARB', amount: '3', recipient: randomEvmAddress() }]),
    );
    expect((await runCli(['pause'], env)).code).toBe(0);
    expect(linesOf(file).map((l) => [l.action, l.who])).toEqual([['pause', 'cli:ann']]);
    // Pausing what is paused, cancelling or retrying nothing: no line, no stream entry.
    expect((await runCli(['pause'], env)).stdout).toContain('already paused');
    const enq = await runCli(['enqueue', csv, '--batch-id', 'af-b'], { ...env, LOG_LEVEL: 'info' });
    expect(enq.code, enq.stderr).toBe(0);
    expect((await runCli(['retry', 'af-b'], env)).code).toBe(0);
    expect((await runCli(['cancel', 'af-b'], env)).stdout).toMatch(/cancelled 1 unsent/);
    expect((await runCli(['cancel', 'af-b'], env)).stdout).toMatch(/cancelled 0 unsent/);
    expect((await runCli(['resume'], env)).code).toBe(0);
    expect((await runCli(['resume'], env)).stdout).toContain('not paused');

    // The API appends to the same file, taking turns with the CLI.
    const HOOK = 'hook-token-audit-file-0123456789';
    const config = loadConfig({ ...env, HOOK_TOKEN: HOOK, HTTP_AUTH_FAILURE_LIMIT: '0' }, { access: true });
    const app = await buildApp({
      config,
      redis,
      producer: { addTransfers: async () => {} },
      logger: createLogger('silent'),
    });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await app.inject({
          method: 'POST',
          url: '/v1/batches/af-b/retry',
          headers: { authorization: `Bearer ${HOOK}` },
        });
        expect(res.json()).toMatchObject({ requeued: 0 });
      }
    } finally {
      await app.close();
    }

    const lines = linesOf(file);
    expect(lines.map((l) => `${l.action} ${l.who}`)).toEqual([
      'pause cli:ann',
      'enqueue cli:ann',
      'cancel cli:ann',
      'resume cli:ann',
    ]);
    // Finding 6 of issue 33: each no-op retry was an entry, pushing real ones out of the stream.
    expect(await redis.xlen(`${env['QUEUE_PREFIX']}:audit`)).toBe(4);
    const streamIds = (await redis.xrange(`${env['QUEUE_PREFIX']}:audit`, '-', '+')).map(([id]) => id);
    expect(lines.map((l) => l['id'])).toEqual(streamIds);
    expect(lines[0]?.prev).toBe(GENESIS_HASH);
    for (let i = 1; i < lines.length; i++) expect(lines[i]?.prev).toBe(lines[i - 1]?.hash);

    const ok = await runCli(['audit', '--verify', file], {});
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('4 line(s), the chain holds');
    expect(ok.stdout).toContain(`last hash: ${lines[3]?.hash}`);
    const json = JSON.parse((await runCli(['audit', '--verify', file, '--json'], {})).stdout) as Record<
      string,
      unknown
    >;
    expect(json).toMatchObject({ ok: true, lines: 4, last_hash: lines[3]?.hash, first_bad_line: null });
    // The CLI logs the head it left when it stops, at info: log storage keeps the anchor.
    expect(logHeads(enq.stderr)).toEqual([lines[1]?.hash]);
  });

  it('--head: a chain that does not reach the hash kept — a cut tail, an emptied file, a chain rebuilt — fails', async () => {
    const lines = linesOf(file);
    const head = lines.at(-1)?.hash as string;
    const verify = (f: string, h: string) => runCli(['audit', '--verify', f, '--head', h, '--json'], {});
    expect((await verify(file, head)).code).toBe(0);
    // An earlier anchor is reached by a chain that went on after it.
    const earlier = await verify(file, (lines[1]?.hash as string).toUpperCase());
    expect(earlier.code, earlier.stdout).toBe(0);
    expect(JSON.parse(earlier.stdout)).toMatchObject({ ok: true, head_reached: true });

    const text = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
    const cut = join(dir, 'cut-tail.jsonl');
    writeFileSync(cut, `${text.slice(0, -1).join('\n')}\n`);
    // Without --head the shorter chain still holds: that is what the anchor is for.
    expect((await runCli(['audit', '--verify', cut], {})).code).toBe(0);
    const emptied = join(dir, 'emptied.jsonl');
    writeFileSync(emptied, '');
    const rebuilt = join(dir, 'rebuilt.jsonl');
    let prev = GENESIS_HASH;
    const again = lines.map((l) => {
      const { prev: _p, hash: _h, ...fields } = l;
      const line = auditLine({ ...fields, who: 'cli:mallory' }, prev);
      prev = (JSON.parse(line) as Line).hash;
      return line;
    });
    writeFileSync(rebuilt, `${again.join('\n')}\n`);
    expect((await runCli(['audit', '--verify', rebuilt], {})).code).toBe(0);
    for (const f of [cut, emptied, rebuilt]) {
      const res = await verify(f, head);
      expect(res.code, f).toBe(1);
      expect(JSON.parse(res.stdout)).toMatchObject({
        ok: false,
        first_bad_line: null,
        head_reached: false,
        problem: expect.stringContaining(`the chain does not reach the head ${head}`),
      });
    }
    const text1 = await runCli(['audit', '--verify', cut, '--head', head], {});
    expect(text1.stdout).toContain('lines were cut off its end, or the file was emptied or rebuilt');
    expect((await runCli(['audit', '--verify', cut, '--head', 'abc'], {})).code).toBe(2);
  });

  it('a long-running process logs the head hourly and when it stops', async () => {
    const logged: Record<string, unknown>[] = [];
    const logger = createLogger('info', {
      write: (l: string) => void logged.push(JSON.parse(l) as Record<string, unknown>),
    });
    const hourly = startAuditHeadLog({ file, logger, everyMs: 20 });
    await waitFor('two heads logged', async () => logged.length >= 2);
    hourly.stop();
    const last = linesOf(file).at(-1)?.hash;
    expect(logged[0]).toMatchObject({ level: 30, msg: 'audit log head', auditLogFile: file, head: last });
    // Stopping logs it once more, whatever the interval.
    logged.length = 0;
    startAuditHeadLog({ file, logger }).stop();
    expect(logged).toEqual([expect.objectContaining({ msg: 'audit log head', head: last })]);
    expect(logged).toHaveLength(1);
  });

  it('names the first line that does not check out: a line removed, a line changed', async () => {
    const text = readFileSync(file, 'utf8').split('\n');
    const removed = join(dir, 'removed.jsonl');
    writeFileSync(removed, [text[0], ...text.slice(2)].join('\n'));
    const cut = await runCli(['audit', '--verify', removed], {});
    expect(cut.code).toBe(1);
    expect(cut.stdout).toMatch(/line 2 its prev [0-9a-f]{16}… is not the hash of the line before/);
    expect(cut.stdout).toContain(`the last good hash: ${(JSON.parse(text[0] as string) as Line).hash}`);

    const changed = join(dir, 'changed.jsonl');
    writeFileSync(changed, text.map((l, i) => (i === 2 ? l.replace('"cancel"', '"resolve"') : l)).join('\n'));
    const edit = await runCli(['audit', '--verify', changed, '--json'], {});
    expect(edit.code).toBe(1);
    expect(JSON.parse(edit.stdout)).toMatchObject({
      ok: false,
      first_bad_line: 3,
      problem: expect.stringContaining('its hash does not match its content'),
    });
    const first = join(dir, 'first.jsonl');
    writeFileSync(first, text.slice(1).join('\n'));
    expect((await runCli(['audit', '--verify', first], {})).stdout).toContain(
      'line 1 its prev is not 64 zeros',
    );
    expect((await runCli(['audit', '--verify', join(dir, 'none.jsonl')], {})).code).toBe(2);
  });

  it('keeps the chain whole when processes append at the same time', async () => {
    const shared = join(dir, 'shared.jsonl');
    const sharedEnv = { ...env, QUEUE_PREFIX: newPrefix(), AUDIT_LOG_FILE: shared };
    // Six processes, each adding to the book at once: each appends under the file's lock in Redis.
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        runCli(['recipients', 'add', randomEvmAddress(), '--label', `p${i}`], {
          ...sharedEnv,
          USDC_BATCH_OPERATOR: `p${i}`,
        }),
      ),
    );
    for (const r of runs) expect(r.code, r.stderr).toBe(0);
    const lines = linesOf(shared);
    expect(lines.map((l) => l.who).sort()).toEqual([
      'cli:p0',
      'cli:p1',
      'cli:p2',
      'cli:p3',
      'cli:p4',
      'cli:p5',
    ]);
    const verify = await runCli(['audit', '--verify', shared, '--json'], {});
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, lines: 6 });
    // In one process too (the lock is the same for each of its connections).
    const clients = [new Redis(suite.url), new Redis(suite.url)];
    try {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          recordAudit(
            { redis: clients[i % 2] as Redis, prefix: sharedEnv.QUEUE_PREFIX, auditLogFile: shared },
            { who: `cli:q${i}`, action: 'pause', detail: { i } },
          ),
        ),
      );
    } finally {
      for (const c of clients) c.disconnect();
    }
    expect(JSON.parse((await runCli(['audit', '--verify', shared, '--json'], {})).stdout)).toMatchObject({
      ok: true,
      lines: 16,
    });
  });

  it("waits for the process that holds the file: its line is chained after the holder's", async () => {
    const held = join(dir, 'held.jsonl');
    const prefix = newPrefix();
    await recordAudit({ redis, prefix, auditLogFile: held }, { who: 'cli:first', action: 'pause' });
    const [first] = linesOf(held) as [Line];
    const st = statSync(held);
    const lock = `${prefix}:audit-file-lock:${createHash('sha256').update(`${st.dev}:${st.ino}`).digest('hex').slice(0, 32)}`;
    // Another process holds the file: it read the last hash and is about to write its line.
    expect(await redis.set(lock, 'other-holder', 'PX', 10_000, 'NX')).toBe('OK');
    const waiting = recordAudit(
      { redis, prefix, auditLogFile: held },
      { who: 'cli:second', action: 'resume' },
    );
    // Its stream entry is written before it asks for the file.
    await waitFor('the second entry in the stream', async () => (await redis.xlen(`${prefix}:audit`)) === 2);
    appendFileSync(
      held,
      `${auditLine({ id: '0-1', at: new Date().toISOString(), who: 'cli:holder', action: 'pause', batch: null, detail: {} }, first.hash)}\n`,
    );
    await redis.del(lock);
    await waiting;
    expect(linesOf(held).map((l) => l.who)).toEqual(['cli:first', 'cli:holder', 'cli:second']);
    expect(JSON.parse((await runCli(['audit', '--verify', held, '--json'], {})).stdout)).toMatchObject({
      ok: true,
      lines: 3,
    });
  });

  it('refuses to append after a line cut short, and says so: the action is not acknowledged', async () => {
    const broken = join(dir, 'broken.jsonl');
    writeFileSync(broken, readFileSync(file, 'utf8'));
    appendFileSync(broken, '{"id":"17000');
    const res = await runCli(['pause'], { ...env, AUDIT_LOG_FILE: broken });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`AUDIT_LOG_FILE ${broken} does not end with a whole line`);
    const verify = await runCli(['audit', '--verify', broken], {});
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain('line 5 is not JSON');
    await runCli(['resume'], env);
  });
});
