import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import { runCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { randomEvmAddress } from '../helpers/fixtures.ts';
import { startServe, type ServeProcess } from '../helpers/serve.ts';

/*
 * docs/production.md "Security": wherever the project prints, logs or serves a URL it shows its scheme, host and
 * port only. RPC providers put the API key in the path (QuickNode, GetBlock), the query or the user
 * part: here one RPC endpoint of each kind, all failing (HTTP 500), so that their URLs end up in
 * errors — in `wallets`, `status`, `rebalance --check`, /v1/treasury, /ui/treasury, the status
 * document, the worker's warn log lines and the transfers' BullMQ job logs.
 */

const PATH_KEY = 'pathKEYs3cr3t0001';
const QUERY_KEY = 'queryKEYs3cr3t0002';
const USER_KEY = 'userKEYs3cr3t0003';
const PASS_KEY = 'passKEYs3cr3t0004';
const CALLBACK_PATH_KEY = 'cbPATHs3cr3t0005';
const CALLBACK_QUERY_KEY = 'cbQUERYs3cr3t0006';
const SECRETS = [PATH_KEY, QUERY_KEY, USER_KEY, PASS_KEY, CALLBACK_PATH_KEY, CALLBACK_QUERY_KEY];
const HOOK = 'hook-token-url-secrets-0123456789';

/** An RPC endpoint that answers every request 500, remembering what it was sent (path, Basic auth). */
async function failingRpc(): Promise<{ base: string; seen: IncomingMessage[]; close(): Promise<void> }> {
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req);
    req.resume();
    req.on('end', () => res.writeHead(500).end('boom'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function expectNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) expect(text, `${where} shows ${secret}`).not.toContain(secret);
}

describe('URLs are shown without their secrets', () => {
  let stack: Stack;
  let rpc: Awaited<ReturnType<typeof failingRpc>>;
  let env: Record<string, string>;
  let shown: string;
  let worker: SpawnedProcess;
  let serve: ServeProcess;
  let batchId: string;
  const rows = [
    { id: 'k-path', from: 'BASE', to: 'ARB', amount: '10.00', recipient: randomEvmAddress() },
    { id: 'k-query', from: 'ARB', to: 'BASE', amount: '20.00', recipient: randomEvmAddress() },
    { id: 'k-user', from: 'ETH', to: 'BASE', amount: '30.00', recipient: randomEvmAddress() },
  ];

  beforeAll(async () => {
    stack = await startStack();
    rpc = await failingRpc();
    shown = `http://${rpc.base}`;
    env = {
      ...stack.env,
      HOOK_TOKEN: HOOK,
      EVM_RPC_URL_BASE: `http://${rpc.base}/${PATH_KEY}/`,
      EVM_RPC_URL_ARB: `http://${rpc.base}/rpc?apikey=${QUERY_KEY}`,
      EVM_RPC_URL_ETH: `http://${USER_KEY}:${PASS_KEY}@${rpc.base}/`,
      SOLANA_RPC_URL: `http://${rpc.base}/v2/${PATH_KEY}`,
      // The same failing server takes the callbacks (answered 500: retried, logged).
      CALLBACK_ALLOWED_HOSTS: rpc.base,
    };
    const enqueued = await stack.enqueue(rows, ['--batch-id', 'url-secrets-1']);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    batchId = enqueued.batchId;
    worker = stack.startWorker(env);
  });
  afterAll(async () => {
    await serve?.stop();
    await worker?.stop(10_000);
    await rpc?.close();
    await stack?.stop();
  });

  it('sends the key to the provider as configured (path, query, Basic auth)', async () => {
    await waitFor('the worker to call every RPC', async () => {
      const urls = rpc.seen.map((r) => r.url ?? '');
      const auth = rpc.seen.map((r) => r.headers.authorization ?? '');
      return (
        urls.some((u) => u.includes(PATH_KEY)) &&
        urls.some((u) => u.includes(QUERY_KEY)) &&
        auth.includes(`Basic ${Buffer.from(`${USER_KEY}:${PASS_KEY}`).toString('base64')}`)
      );
    });
  });

  it('BullMQ job logs of the transfers name the RPC by scheme, host and port only', async () => {
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    for (const row of rows) {
      const queue = new Queue(queueNameFor(row.from as Chain), {
        connection: { url: stack.redis.url },
        prefix,
      });
      try {
        const logs = await waitFor(
          `the job log of ${row.id} to say the RPC failed`,
          async () => {
            const { logs } = await queue.getJobLogs(transferJobId(batchId, row.id));
            const text = logs.join('\n');
            // USDC's own controls are read first (SCREENING_ONCHAIN=on): the transfer waits on them.
            return text.includes("reading USDC's own controls") ? text : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        );
        expect(logs, row.id).toContain(`RPC ${shown}: HTTP 500`);
        expectNoSecret(logs, `job log of ${row.id}`);
      } finally {
        await queue.close();
      }
    }
  });

  it('worker warn log lines name the RPC without its secret', async () => {
    const out = await waitFor('the worker to warn of each RPC', async () => {
      const text = worker.output();
      const warned = ['BASE', 'ARB', 'ETH'].every((c) =>
        text.split('\n').some((l) => l.includes('"level":40') && l.includes(`${c} RPC ${shown}`)),
      );
      return warned ? text : undefined;
    });
    expectNoSecret(out, 'worker log');
  });

  it('`status`, `wallets` and `rebalance --check` print the RPC without its secret', async () => {
    const status = await runCli(['status', batchId, '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`RPC ${shown}`);
    expectNoSecret(status.stdout + status.stderr, 'status');

    for (const args of [['wallets'], ['wallets', '--json']]) {
      const res = await runCli(args, env);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout, args.join(' ')).toContain(`RPC ${shown}`);
      expectNoSecret(res.stdout + res.stderr, args.join(' '));
    }

    const policy = join(stack.dir, 'keys.yaml');
    writeFileSync(
      policy,
      'chains:\n  BASE: { min: 1, target: 2 }\n  ARB: { target: 1 }\n  ETH: { target: 1 }\n',
    );
    const check = await runCli(['rebalance', policy, '--check'], env);
    expect(check.code).toBe(1);
    expect(check.stdout + check.stderr).toContain(shown);
    expectNoSecret(check.stdout + check.stderr, 'rebalance --check');
  });

  it('/v1/treasury, /ui/treasury and the status document show the RPC without its secret', async () => {
    serve = await startServe(env);
    const treasury = await serve.call('/v1/treasury', { token: HOOK });
    expect(treasury.status).toBe(200);
    const json = await treasury.text();
    expect(json).toContain(`RPC ${shown}`);
    expectNoSecret(json, '/v1/treasury');

    const page = await serve.call('/ui/treasury', { token: HOOK });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`RPC ${shown}`);
    expectNoSecret(html, '/ui/treasury');

    const doc = await serve.call(`/v1/batches/${batchId}`, { token: HOOK });
    expect(doc.status).toBe(200);
    expectNoSecret(await doc.text(), `/v1/batches/${batchId}`);
    expectNoSecret(serve.process.output(), 'serve log');
  });

  it('calls a callback_url whole, and shows it nowhere: status, pages, the callback job, the logs', async () => {
    const callbackUrl = `http://${rpc.base}/hooks/${CALLBACK_PATH_KEY}?token=${CALLBACK_QUERY_KEY}`;
    const posted = await serve.call('/v1/batches', {
      method: 'POST',
      token: HOOK,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        batch_id: 'url-secrets-cb',
        callback_url: callbackUrl,
        transfers: [
          // Paid where the RPCs answer (every other one fails on purpose, and a transfer whose
          // chains cannot be screened waits): from Solana (the service builds), to POLYGON.
          { id: 'cb-1', from: 'SOLANA', to: 'POLYGON', amount: '10.00', recipient: randomEvmAddress() },
        ],
      }),
    });
    expect(posted.status, await posted.clone().text()).toBe(202);
    await stack.waitComplete('url-secrets-cb', 60_000);
    // Kept whole where it is called: the receiver got its path and query.
    await waitFor('the callback to be sent', async () =>
      rpc.seen.some(
        (r) => r.method === 'POST' && r.url === `/hooks/${CALLBACK_PATH_KEY}?token=${CALLBACK_QUERY_KEY}`,
      ),
    );
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    const callbacks = new Queue('callbacks', { connection: { url: stack.redis.url }, prefix });
    try {
      const job = await waitFor('the callback job to have failed once', async () => {
        const j = await callbacks.getJob('url-secrets-cb/cb1');
        return j && j.attemptsMade > 0 ? j : undefined;
      });
      const { logs } = await callbacks.getJobLogs('url-secrets-cb/cb1');
      expectNoSecret(JSON.stringify({ job: job.toJSON(), logs }), 'the callback job');
    } finally {
      await callbacks.close();
    }
    await waitFor('the worker to log the failed callback', async () =>
      worker.output().includes('callback failed'),
    );
    expectNoSecret(worker.output(), 'worker log');
    for (const path of [
      '/v1/batches/url-secrets-cb',
      '/ui/batches/url-secrets-cb',
      '/v1/batches',
      '/v1/audit',
    ]) {
      const res = await serve.call(path, { token: HOOK });
      expect(res.status, path).toBe(200);
      expectNoSecret(await res.text(), path);
    }
    const status = await runCli(['status', 'url-secrets-cb', '--json'], env);
    expectNoSecret(status.stdout + status.stderr, 'status');
    expectNoSecret(serve.process.output(), 'serve log');
  });
});
