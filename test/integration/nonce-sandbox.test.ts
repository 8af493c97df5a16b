import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { redisForSuite } from '../helpers/redis.ts';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';

// Fixed key vector (the first Hardhat/Anvil account): the treasury that owns every permit here.
const KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const OWNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const WORKER = fileURLToPath(new URL('../helpers/nonce-worker.ts', import.meta.url));
const CHAIN = 'BASE';

let redis: Awaited<ReturnType<typeof redisForSuite>>;
let sandbox: SandboxProcess;
let run = 0;

beforeAll(async () => {
  [redis, sandbox] = await Promise.all([redisForSuite(), startSandboxProcess()]);
});
afterAll(async () => {
  await Promise.all([sandbox?.stop(), redis?.close()]);
});
beforeEach(async () => {
  await sandbox.admin.reset();
});

type WorkerResult = {
  code: number | null;
  accepted: { holder: string; nonce: string }[];
  summary: Record<string, unknown>;
  stderr: string;
};

/** Runs `workers` processes of test/helpers/nonce-worker.ts sharing one Redis prefix. */
async function runWorkers(opts: {
  workers: number;
  count: number;
  refuseEvery?: number;
}): Promise<WorkerResult[]> {
  const prefix = `${redis.prefix}-${++run}`;
  const env = {
    PATH: process.env['PATH'] ?? '',
    REDIS_URL: redis.url,
    PREFIX: prefix,
    COUNT: String(opts.count),
    CONCURRENCY: '4',
    CHAIN,
    REFUSE_EVERY: String(opts.refuseEvery ?? 0),
    TRANSFER_API_URL: sandbox.url,
    TRANSFER_API_KEY: sandbox.api_key,
    EVM_PRIVATE_KEY: KEY,
    PERMIT_SPENDER: sandbox.spender,
    NETWORK: sandbox.network,
    [`EVM_RPC_URL_${CHAIN}`]: sandbox.rpc[CHAIN],
    LOG_LEVEL: 'warn',
  };
  return await Promise.all(
    Array.from({ length: opts.workers }, (_, id) => {
      const child = spawn(process.execPath, [WORKER], {
        env: { ...env, WORKER_ID: String(id) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      return new Promise<WorkerResult>((resolve) =>
        child.once('exit', (code) => {
          clearTimeout(timer);
          const lines = out
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          resolve({
            code,
            accepted: lines.filter((l) => 'holder' in l) as WorkerResult['accepted'],
            summary: lines.find((l) => 'done' in l) ?? {},
            stderr: err,
          });
        }),
      );
    }),
  );
}

async function ourLedger() {
  return (await sandbox.admin.ledger()).filter(
    (e) => e.kind === 'evm' && e.owner === OWNER && e.from === CHAIN,
  );
}

function expectAllAccepted(results: WorkerResult[], perWorker: number) {
  for (const r of results) {
    expect(r.stderr).not.toMatch(/failed/);
    expect(r.code).toBe(0);
    expect(r.accepted).toHaveLength(perWorker);
  }
}

/** Permits reached the service one at a time, in nonce order. */
function expectNonceOrder(nonces: bigint[]) {
  for (let i = 1; i < nonces.length; i++) expect(nonces[i]).toBeGreaterThan(nonces[i - 1] as bigint);
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => String(from + i));

describe('nonce manager against the sandbox, two worker processes', () => {
  it('accepts 2 × 50 permits for one (chain, owner), nonces 0–99 each used once, in order', async () => {
    const results = await runWorkers({ workers: 2, count: 50 });
    expectAllAccepted(results, 50);
    const ledger = await ourLedger();
    expect(ledger.map((e) => e.nonce).sort((a, b) => Number(a) - Number(b))).toEqual(range(0, 100));
    expectNonceOrder(ledger.map((e) => BigInt(e.nonce as string)));
    expect(new Set(ledger.map((e) => e.amount)).size).toBe(50); // each worker paid amounts 1.000000–1.000049
    expect((await sandbox.admin.nonce(CHAIN, OWNER)).expected).toBe(100n);
  });

  it('does the same while the RPC nonce lags 1.5 s behind the service', async () => {
    await sandbox.admin.configure({ rpcNonceLagMs: 1_500 });
    const results = await runWorkers({ workers: 2, count: 50 });
    expectAllAccepted(results, 50);
    const ledger = await ourLedger();
    expect(ledger.map((e) => e.nonce).sort((a, b) => Number(a) - Number(b))).toEqual(range(0, 100));
    expectNonceOrder(ledger.map((e) => BigInt(e.nonce as string)));
    // No permit was refused because of a stale chain reading.
    for (const r of results) expect(r.summary['refused']).toBe(0);
  });

  it('gives a refused permit’s nonce back to the pool: still 0–99 each used once', async () => {
    await sandbox.admin.configure({ rpcNonceLagMs: 1_500 });
    const results = await runWorkers({ workers: 2, count: 50, refuseEvery: 10 });
    expectAllAccepted(results, 50);
    for (const r of results) expect(r.summary['refused']).toBe(5);
    const ledger = await ourLedger();
    expect(ledger.map((e) => e.nonce).sort((a, b) => Number(a) - Number(b))).toEqual(range(0, 100));
    expectNonceOrder(ledger.map((e) => BigInt(e.nonce as string)));
  });

  it('moves to the chain nonce after an external bump, then carries on', async () => {
    // The owner signed 3 permits elsewhere before we start, and 4 more while we run.
    await sandbox.admin.bumpNonce(CHAIN, OWNER, 3);
    // 10 ms per call keeps the run long enough for the bump below to land mid-run.
    await sandbox.admin.configure({ latencyMs: 10 });
    const running = runWorkers({ workers: 2, count: 50 });
    for (let i = 0; i < 200 && (await ourLedger()).length < 30; i++)
      await new Promise((r) => setTimeout(r, 25));
    await sandbox.admin.bumpNonce(CHAIN, OWNER, 4);
    const results = await running;
    expectAllAccepted(results, 50);
    const ledger = await ourLedger();
    const nonces = ledger.map((e) => BigInt(e.nonce as string));
    expect(new Set(nonces).size).toBe(100);
    expectNonceOrder(nonces);
    expect(nonces[0]).toBe(3n);
    expect(nonces.at(-1)).toBe(106n); // 100 of ours + 7 external, no gap left behind
    const moved = results.reduce((n, r) => n + Number(r.summary['movedOnChain']), 0);
    expect(moved).toBeGreaterThanOrEqual(1);
    expect((await sandbox.admin.nonce(CHAIN, OWNER)).expected).toBe(107n);
  });
});
