import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { csvOf, mixedRows } from '../helpers/fixtures.ts';
import { startServe } from '../helpers/serve.ts';

/*
 * docs/security.md "An ACL user of its own": the project runs as a Redis user that may touch only
 * its own keys and channels (QUEUE_PREFIX) and no administrative command. A whole batch is
 * enqueued, paid, read back and served through that user; Redis's ACL log shows nothing refused but
 * bull-board's CLIENT LIST, and the user cannot flush, reconfigure or read what is not the project's.
 */

const PASSWORD = 'acl-password-for-tests-0123456789';
const HOOK = 'hook-token-redis-acl-0123456789';

/**
 * The rules of docs/security.md's ACL line (`user usdc-batch on >CHANGE-ME … ~usdc:* …`), with the
 * test's password and QUEUE_PREFIX: what is tested is what the documentation says.
 */
function documentedAcl(prefix: string): string[] {
  const doc = readFileSync(join(REPO_ROOT, 'docs/security.md'), 'utf8');
  const line = doc.split('\n').find((l) => l.startsWith('user usdc-batch '));
  if (!line) throw new Error('docs/security.md has no "user usdc-batch" ACL line');
  return line
    .split(' ')
    .slice(2)
    .map((rule) =>
      rule === '>CHANGE-ME' ? `>${PASSWORD}` : rule.replace(/^([~&])usdc:\*$/, `$1${prefix}:*`),
    );
}

describe('the project under a Redis ACL user of its own', () => {
  let stack: Stack;
  let env: Record<string, string>;
  let prefix: string;

  beforeAll(async () => {
    stack = await startStack();
    prefix = stack.env['QUEUE_PREFIX'] as string;
    await stack.client.call('ACL', 'SETUSER', 'usdc-batch', ...documentedAcl(prefix));
    await stack.client.call('ACL', 'LOG', 'RESET');
    env = {
      ...stack.env,
      REDIS_URL: `redis://usdc-batch:${PASSWORD}@127.0.0.1:${stack.redis.port}`,
      HOOK_TOKEN: HOOK,
    };
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("enqueues, pays, reads and serves a batch, refused nothing but bull-board's CLIENT LIST", async () => {
    const file = join(stack.dir, 'acl.csv');
    writeFileSync(file, csvOf(mixedRows(6, 'acl')));
    const enqueued = await runCli(['enqueue', file, '--batch-id', 'acl-1'], env);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const worker = stack.startWorker(env);
    // On a refusal, say which commands and keys the user was refused (Redis's ACL log).
    const refused = async () => JSON.stringify(await stack.client.call('ACL', 'LOG', '20'));
    const doc = await stack.waitComplete('acl-1', 120_000).catch(async (err: Error) => {
      throw new Error(`${err.message}\nACL LOG ${await refused()}\nworker: ${worker.output().slice(-3000)}`);
    });
    expect(doc.counts.submitted).toBe(6);
    const policy = join(stack.dir, 'acl.yaml');
    writeFileSync(policy, 'chains:\n  BASE: { min: 1, target: 2 }\n  ARB: { target: 1 }\n');
    for (const args of [
      ['status', 'acl-1'],
      ['batches'],
      ['export', 'acl-1'],
      ['retry', 'acl-1'],
      ['wallets'],
      ['audit'],
      ['recipients', 'list'],
      ['schedule', 'add', 'acl-nightly', '--cron', '0 2 * * *', '--file', file],
      ['schedule', 'list'],
      ['schedule', 'remove', 'acl-nightly'],
      ['rebalance', policy, '--dry-run'],
      ['pause'],
      ['resume'],
    ]) {
      const r = await runCli(args, env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    const serve = await startServe(env);
    try {
      for (const path of [
        '/v1/batches/acl-1',
        '/dashboard/api/queues',
        '/metrics',
        '/v1/treasury',
        '/readyz',
      ]) {
        const res = await serve.call(path, { token: HOOK });
        expect(res.status, path).toBe(200);
      }
    } finally {
      await serve.stop();
    }
    await worker.stop(10_000);
    expect(worker.output()).not.toMatch(/NOPERM|no permissions/i);
    // The durability check reads CONFIG (allowed: config|get) and says nothing.
    expect(worker.output()).not.toContain('cannot verify that Redis is durable');
    // The one refusal: bull-board asks CLIENT LIST for its worker count (every connection to this
    // Redis, of any user: left out of the ACL; bull-board shows no count and goes on).
    const log = (await stack.client.call('ACL', 'LOG', '100')) as string[][];
    const objects = log.map((entry) => entry[entry.indexOf('object') + 1]);
    expect([...new Set(objects)], await refused()).toEqual(['client|list']);
  }, 240_000);

  it('keeps the user away from other keys, other channels and administration', async () => {
    const user = new Redis(env['REDIS_URL'] as string, { maxRetriesPerRequest: 0 });
    try {
      await stack.client.set('other-app:secret', 'x');
      for (const attempt of [
        () => user.get('other-app:secret'),
        () => user.set('other-app:x', '1'),
        () => user.publish('other-app:channel', 'x'),
        () => user.flushall(),
        () => user.flushdb(),
        () => user.call('CONFIG', 'SET', 'appendonly', 'no'),
        () => user.keys('*'),
        () => user.scan('0'),
        () => user.randomkey(),
        () => user.call('ACL', 'LIST'),
        () => user.call('SCRIPT', 'FLUSH'),
        () => user.call('SHUTDOWN', 'NOSAVE'),
      ]) {
        await expect(attempt()).rejects.toThrow(/NOPERM/);
      }
      expect(await user.get(`${prefix}:paused`)).toBeNull();
    } finally {
      user.disconnect();
    }
  });
});
