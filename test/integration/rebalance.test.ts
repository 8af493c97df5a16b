import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveCli } from '../helpers/approve.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import type { EvmChain } from '../../src/domain/chains.ts';
import { formatUsdc } from '../../src/domain/money.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { createProducer } from '../../src/queue/producer.ts';
import { fireSchedule } from '../../src/queue/schedule-firing.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import { createBatchReader } from '../../src/present/batch-status.ts';
import { serviceEstimator } from '../../src/treasury/planner.ts';
import { runCli, waitFor, type SpawnedProcess } from '../helpers/cli.ts';
import { startStack, type Stack } from '../helpers/e2e.ts';
import { startServe } from '../helpers/serve.ts';
import { randomEvmAddress, TEST_EVM_ADDRESS } from '../helpers/fixtures.ts';

/*
 * Treasury rebalancing against the sandbox's real local chains (anvil): a policy with a chain below
 * its min and a donor above its target is planned, enqueued once as an ordinary batch, paid by a
 * real worker, and the balances move on the chains; one run in flight per policy; the guards of an
 * ordinary batch apply.
 */

const USDC = 1_000_000n;

type RebalanceDoc = {
  policy: string;
  batch_id: string | null;
  created: boolean;
  waiting_for: string | null;
  chains: {
    chain: string;
    balance: string;
    incoming: string;
    outgoing: string;
    position: string;
    min: string | null;
    target: string;
    after: string;
    state: string;
  }[];
  moves: {
    id: string;
    from: string;
    to: string;
    amount: string;
    fee: string;
    net_receive: string;
    recipient: string;
  }[];
  skipped: { from: string; to: string; amount: string; reason: string }[];
  short: { chain: string; missing: string }[];
  held?: boolean;
};

let stack: Stack;
let worker: SpawnedProcess | undefined;

async function setBalance(chain: EvmChain, amount: bigint): Promise<void> {
  const reader = createChainReader({
    config: loadConfig({ [`EVM_RPC_URL_${chain}`]: stack.sandbox.rpc[chain] }),
  });
  await stack.sandbox.admin.setBalance(chain, TEST_EVM_ADDRESS, formatUsdc(amount));
  await waitFor(`${chain} RPC to show the balance`, async () =>
    (await reader.usdcBalance(chain, TEST_EVM_ADDRESS)) === amount ? true : undefined,
  );
}

function policyFile(name: string, text: string): string {
  const file = join(stack.dir, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

async function rebalance(
  file: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ code: number | null; doc: RebalanceDoc; stderr: string; stdout: string }> {
  const res = await runCli(['rebalance', file, '--json', ...args], { ...stack.env, ...env });
  let doc: RebalanceDoc;
  try {
    doc = JSON.parse(res.stdout) as RebalanceDoc;
  } catch {
    throw new Error(`rebalance printed no JSON (exit ${res.code}): ${res.stdout}\n${res.stderr}`);
  }
  return { code: res.code, doc, stderr: res.stderr, stdout: res.stdout };
}

async function waitSettled(batchId: string) {
  const reader = createBatchReader({ redis: stack.client, prefix: stack.env['QUEUE_PREFIX'] as string });
  return await waitFor(
    `batch ${batchId} to settle`,
    async () => {
      const s = await reader.summary(batchId);
      return s?.settled === true ? s : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 250 },
  );
}

describe('rebalance against the sandbox', () => {
  beforeAll(async () => {
    stack = await startStack({
      latencyMs: 5,
      sandbox: { statusStepMs: 200 },
    });
    // The sandbox's Solana RPC, so a policy may name SOLANA.
    stack.env['SOLANA_RPC_URL'] = stack.sandbox.rpc.SOLANA;
    // Issue 33: `rebalance` and `serve` read no key (docs/keys.md), and the first
    // runs here come before any worker has published its addresses: the treasury's public addresses.
    stack.env['EVM_OWNER_ADDRESSES'] = TEST_EVM_ADDRESS;
    stack.env['SOLANA_ADDRESS'] = stack.solanaAddress;
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('plans a chain below its min from the donor above its target, pays it once, and finds nothing to do once settled', async () => {
    await setBalance('BASE', 10n * USDC);
    await setBalance('ARB', 1_000n * USDC);
    const file = policyFile(
      'nightly',
      'chains:\n  BASE: { min: 50, target: 100 }\n  ARB: { target: 200 }\nmin_move: 1\n',
    );

    const dry = await rebalance(file, ['--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.doc).toMatchObject({ policy: 'nightly', batch_id: null, created: false, waiting_for: null });
    expect(dry.doc.chains.map((c) => [c.chain, c.balance, c.position, c.state])).toEqual([
      ['BASE', '10.00', '10.00', 'below_min'],
      ['ARB', '1000.00', '1000.00', 'spare'],
    ]);
    expect(dry.doc.moves).toHaveLength(1);
    const [move] = dry.doc.moves;
    expect(move).toMatchObject({ id: 'rb-ARB-BASE', from: 'ARB', to: 'BASE', recipient: TEST_EVM_ADDRESS });
    const net = BigInt(Math.round(Number(move!.net_receive) * 1e6));
    expect(net).toBeGreaterThanOrEqual(90n * USDC);
    expect(net - 90n * USDC).toBeLessThan(10_000n);
    expect(dry.doc.short).toEqual([]);
    // A dry run enqueues nothing.
    expect(await stack.client.zcard(`${stack.env['QUEUE_PREFIX']}:batches`)).toBe(0);

    const first = await rebalance(file);
    expect(first.code).toBe(0);
    expect(first.doc.created).toBe(true);
    expect(first.doc.batch_id).toMatch(/^rebalance-nightly-[0-9]{8}T[0-9]{6}Z$/);
    expect(first.doc.moves.map((m) => [m.id, m.amount])).toEqual([['rb-ARB-BASE', move!.amount]]);
    const batchId = first.doc.batch_id as string;
    const status = await stack.status(batchId);
    expect(status.source).toBe('rebalance');
    expect(status.transfers.map((t) => [t.id, t.from, t.to, t.amount, t.recipient])).toEqual([
      ['rb-ARB-BASE', 'ARB', 'BASE', move!.amount, TEST_EVM_ADDRESS],
    ]);

    // Not settled yet (no worker): a second run enqueues nothing and names the batch.
    const second = await rebalance(file);
    expect(second.code).toBe(0);
    expect(second.doc).toMatchObject({ batch_id: null, created: false, waiting_for: batchId, moves: [] });
    // The queued move counts as outgoing on the donor.
    expect(second.doc.chains.find((c) => c.chain === 'ARB')?.outgoing).toBe(move!.amount);

    worker = stack.startWorker();
    await stack.waitComplete(batchId);
    await waitSettled(batchId);
    const arb = await stack.sandbox.admin.balance('ARB', TEST_EVM_ADDRESS);
    const base = await stack.sandbox.admin.balance('BASE', TEST_EVM_ADDRESS);
    expect(arb).toBe(1_000n * USDC - BigInt(Math.round(Number(move!.amount) * 1e6)));
    expect(base).toBe(10n * USDC + net);

    const after = await waitFor('the RPC to show the move', async () => {
      const r = await rebalance(file);
      return r.doc.chains.find((c) => c.chain === 'BASE')?.state === 'ok' ? r : undefined;
    });
    expect(after.code).toBe(0);
    expect(after.doc).toMatchObject({
      batch_id: null,
      created: false,
      waiting_for: null,
      moves: [],
      short: [],
    });
    expect(await stack.client.zcard(`${stack.env['QUEUE_PREFIX']}:batches`)).toBe(1);

    const check = await runCli(['rebalance', file, '--check'], stack.env);
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/BASE\s+\S+\s+0\.00\s+0\.00/);
  }, 180_000);

  it('two runs started at the same instant make one batch', async () => {
    await worker?.stop();
    worker = undefined;
    await setBalance('POLYGON', 5n * USDC);
    await setBalance('ETH', 500n * USDC);
    const file = policyFile('twins', 'chains:\n  POLYGON: { min: 20, target: 40 }\n  ETH: { target: 100 }\n');
    const [a, b] = await Promise.all([rebalance(file), rebalance(file)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const made = [a, b].filter((r) => r.doc.created);
    expect(made).toHaveLength(1);
    const other = [a, b].find((r) => !r.doc.created);
    expect(other?.doc.waiting_for).toBe(made[0]?.doc.batch_id);
    const ids = await stack.client.zrange(`${stack.env['QUEUE_PREFIX']}:batches`, 0, -1);
    expect(ids.filter((id) => id.startsWith('rebalance-twins-'))).toHaveLength(1);
  }, 60_000);

  it('a queued payroll from the donor lowers what it can give', async () => {
    await setBalance('ARB', 1_000n * USDC);
    await setBalance('BASE', 10n * USDC);
    const payroll = await stack.enqueue([
      { id: 'salary-1', from: 'ARB', to: 'BASE', amount: '850.00', recipient: randomEvmAddress() },
    ]);
    expect(payroll.code).toBe(0);
    const file = policyFile('payroll', 'chains:\n  BASE: { min: 50, target: 100 }\n  ARB: { target: 120 }\n');
    const dry = await rebalance(file, ['--dry-run']);
    const arb = dry.doc.chains.find((c) => c.chain === 'ARB');
    expect(arb).toMatchObject({ balance: '1000.00', outgoing: '850.00', position: '150.00' });
    // ARB can give only 30 of the 90 BASE needs: BASE stays below its min (exit 1).
    expect(dry.doc.moves).toHaveLength(1);
    expect(dry.doc.moves[0]?.amount).toBe('30.00');
    expect(dry.doc.short.map((s) => s.chain)).toEqual(['BASE']);
    expect(dry.code).toBe(1);
  }, 60_000);

  it('refuses a policy with every problem named (exit 2), and a balance it cannot read (exit 1)', async () => {
    const bad = policyFile(
      'bad',
      'chains:\n  ARB: { min: 300, target: 200 }\n  TRON: { target: 1 }\nmin_mvoe: 5\n',
    );
    const res = await runCli(['rebalance', bad, '--dry-run'], stack.env);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('chains.ARB.min: must not exceed target');
    expect(res.stderr).toMatch(/chains\.TRON: unknown chain/);
    expect(res.stderr).toContain('min_mvoe: unknown key');

    const file = policyFile('unreachable', 'chains:\n  BASE: { min: 1, target: 2 }\n  ARB: { target: 1 }\n');
    const down = await runCli(['rebalance', file, '--json'], {
      ...stack.env,
      EVM_RPC_URL_ARB: 'http://127.0.0.1:9/',
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot read the treasury's balance on ARB/);
    const ids = await stack.client.zrange(`${stack.env['QUEUE_PREFIX']}:batches`, 0, -1);
    expect(ids.some((id) => id.startsWith('rebalance-unreachable-'))).toBe(false);
  }, 60_000);

  it('a batch over the approval threshold stays held until approve; NEW_RECIPIENT_POLICY=hold never holds the treasury', async () => {
    await setBalance('POLYGON', 1_000n * USDC);
    await setBalance('BASE', 2n * USDC);
    const env = { NEW_RECIPIENT_POLICY: 'hold', APPROVER_TOKEN: 'approver-token-for-tests-0123456789' };
    const small = policyFile('own', 'chains:\n  BASE: { min: 5, target: 8 }\n  POLYGON: { target: 100 }\n');
    const own = await rebalance(small, [], env);
    expect(own.code).toBe(0);
    expect(own.doc.created).toBe(true);
    const ownStatus = await stack.status(own.doc.batch_id as string);
    expect(ownStatus.held).toBe(false);
    expect(ownStatus.transfers.every((t) => !t.new_recipient)).toBe(true);

    await setBalance('ETH', 1_000n * USDC);
    const big = policyFile(
      'approval',
      'chains:\n  ETH: { min: 600, target: 900 }\n  POLYGON: { target: 100 }\n',
    );
    await setBalance('ETH', 100n * USDC);
    const held = await rebalance(big, [], { APPROVAL_THRESHOLD_USDC: '100' });
    expect(held.doc.created).toBe(true);
    expect(held.doc.held).toBe(true);
    const batchId = held.doc.batch_id as string;
    worker ??= stack.startWorker();
    await stack.waitComplete(own.doc.batch_id as string);
    // Held: the worker does not touch it, and the next run waits for it.
    expect((await stack.status(batchId)).counts.queued).toBe(1);
    const again = await rebalance(big, [], { APPROVAL_THRESHOLD_USDC: '100' });
    expect(again.doc.waiting_for).toBe(batchId);
    const approve = await approveCli(batchId, stack.env);
    expect(approve.code).toBe(0);
    const done = await stack.waitComplete(batchId);
    expect(done.counts.submitted).toBe(1);
  }, 120_000);

  it('a schedule stores the policy and each firing plans afresh from the balances of that moment', async () => {
    await setBalance('BASE', 10n * USDC);
    await setBalance('ARB', 1_000n * USDC);
    const file = policyFile(
      'treasury',
      'name: sched\nchains:\n  BASE: { min: 50, target: 100 }\n  ARB: { target: 200 }\n',
    );
    const added = await runCli(
      ['schedule', 'add', 'nightly', '--cron', '0 2 * * *', '--rebalance', file],
      stack.env,
    );
    expect(added.code, added.stderr).toBe(0);
    // Stored: the file may change or go away.
    writeFileSync(file, 'not a policy');
    const listed = JSON.parse((await runCli(['schedule', 'list', '--json'], stack.env)).stdout) as {
      schedules: { name: string; kind: string; policy: string | null }[];
    };
    expect(listed.schedules.find((x) => x.name === 'nightly')).toMatchObject({
      kind: 'rebalance',
      policy: 'sched',
    });
    const text = await runCli(['schedule', 'list'], stack.env);
    expect(text.stdout).toMatch(/nightly .*rebalance sched/);

    const config = loadConfig(stack.env, { service: true });
    const client = createServiceClient({
      baseUrl: config.transferApiUrl as string,
      apiKey: config.transferApiKey!,
      connectTimeoutMs: 2_000,
      responseTimeoutMs: 5_000,
    });
    const producer = createProducer({ connection: stack.client, prefix: config.queuePrefix });
    try {
      const deps = {
        redis: stack.client,
        prefix: config.queuePrefix,
        jobs: producer,
        config,
        rebalance: { config, estimate: serviceEstimator(client) },
      };
      const at = Date.UTC(2031, 0, 1, 2, 0, 0);
      const fired = await fireSchedule(deps, 'nightly', at);
      expect(fired).toEqual({ status: 'rebalance', batchId: 'nightly-20310101T020000Z', result: 'enqueued' });
      const doc = await stack.status('nightly-20310101T020000Z');
      expect(doc.source).toBe('rebalance');
      expect(doc.transfers.map((t) => [t.id, t.from, t.to])).toEqual([['rb-ARB-BASE', 'ARB', 'BASE']]);
      // The same firing again (a retried job) adds nothing; the next one waits while it is unsettled.
      const next = await fireSchedule(deps, 'nightly', Date.UTC(2031, 0, 2, 2, 0, 0));
      expect(next).toMatchObject({ status: 'rebalance', result: 'waiting' });
      worker ??= stack.startWorker();
      await stack.waitComplete('nightly-20310101T020000Z');
    } finally {
      await producer.close();
      client.close();
    }
  }, 120_000);

  it("GET /v1/treasury and /metrics show the balances, positions and the scheduled policy's min and target", async () => {
    // A worker sampling the balances often (TREASURY_BALANCE_INTERVAL_MS) for /metrics.
    await worker?.stop();
    worker = stack.startWorker({ TREASURY_BALANCE_INTERVAL_MS: '300' });
    const token = 'hook-token-long-enough-for-treasury';
    const api = await startServe({ ...stack.env, HOOK_TOKEN: token });
    try {
      const base = await stack.sandbox.admin.balance('BASE', TEST_EVM_ADDRESS);
      const res = await api.call('/v1/treasury', { token });
      expect(res.status).toBe(200);
      const view = (await res.json()) as {
        chains: {
          chain: string;
          balance: string | null;
          owners: { address: string; balance: string }[];
          position: string | null;
          error: string | null;
        }[];
        policies: {
          schedule: string;
          policy: string;
          next_run: string | null;
          chains: { chain: string; min: string | null; target: string; state: string | null }[];
        }[];
      };
      expect(view.chains.map((c) => c.chain)).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']);
      const baseView = view.chains.find((c) => c.chain === 'BASE');
      expect(baseView).toMatchObject({
        balance: formatUsdc(base),
        owners: [{ address: TEST_EVM_ADDRESS, balance: formatUsdc(base) }],
        error: null,
      });
      expect(view.policies).toEqual([
        {
          schedule: 'nightly',
          policy: 'sched',
          cron: '0 2 * * *',
          tz: 'UTC',
          // The next 02:00 UTC, and what the last firing (2031-01-02, above) did.
          next_run: expect.stringMatching(/^\d{4}-\d\d-\d\dT02:00:00\.000Z$/),
          last_fired_at: '2031-01-02T02:00:00.000Z',
          last_batch: null,
          last_status: 'waiting',
          last_error: 'an earlier run is in flight: nightly-20310101T020000Z',
          chains: [
            {
              chain: 'BASE',
              min: '50.00',
              target: '100.00',
              state: expect.stringMatching(/^(ok|spare|below_min)$/),
            },
            { chain: 'ARB', min: null, target: '200.00', state: expect.stringMatching(/^(ok|spare)$/) },
          ],
        },
      ]);
      expect((await api.call('/v1/treasury')).status).toBe(401);

      const metrics = await waitFor('the sampled BASE balance on /metrics', async () => {
        const text = await (await api.call('/metrics', { token })).text();
        const m = /^usdc_batch_treasury_balance_usdc\{chain="BASE"\} (\S+)$/m.exec(text);
        return m && Number(m[1]) === Number(base) / 1e6 ? text : undefined;
      });
      expect(metrics).toMatch(/^usdc_batch_treasury_min_usdc\{chain="BASE",policy="sched"\} 50$/m);
      expect(metrics).toMatch(/^usdc_batch_treasury_target_usdc\{chain="ARB",policy="sched"\} 200$/m);
      expect(metrics).not.toMatch(/usdc_batch_treasury_min_usdc\{chain="ARB"/);
      // Each owner's native gas per chain, as the worker sampled it, and what its next transactions cost.
      const gas = await waitFor('the sampled owner gas on /metrics', async () => {
        const text = await (await api.call('/metrics', { token })).text();
        return /^usdc_batch_owner_gas_native\{chain="BASE",owner="0x/m.test(text) ? text : undefined;
      });
      const wei = await stack.sandbox.admin.nativeBalance('BASE', TEST_EVM_ADDRESS);
      const gauge = new RegExp(
        `^usdc_batch_owner_gas_native\\{chain="BASE",owner="${TEST_EVM_ADDRESS}"\\} (\\S+)$`,
        'm',
      );
      expect(Number(gauge.exec(gas)?.[1])).toBeCloseTo(Number(wei) / 1e18, 6);
      expect(gas).toMatch(
        /^usdc_batch_owner_gas_needed_native\{chain="BASE",owner="0x[0-9a-fA-F]{40}"\} [0-9.e-]+$/m,
      );
    } finally {
      await api.stop();
    }
  }, 120_000);
  it('a policy with via: cctp makes a batch on that road, every move recorded on it', async () => {
    // No worker: the batch is looked at, then cancelled (the CCTP flow is tested on its own).
    await worker?.stop();
    worker = undefined;
    await setBalance('BASE', 0n);
    await setBalance('ARB', 10_000n * USDC);
    const file = policyFile(
      'roads',
      'chains:\n  BASE: { min: 5000, target: 6000 }\n  ARB: { target: 1 }\nvia: cctp\n',
    );
    // Planned on Circle's fee (the sandbox's attestation API: Standard is free), not the service's.
    const run = await rebalance(file, [], { CCTP_API_URL: stack.sandbox.cctp.api_url });
    expect(run.code, run.stderr).toBe(0);
    const batchId = run.doc.batch_id as string;
    expect(run.doc.created, JSON.stringify(run.doc)).toBe(true);
    expect(run.doc.moves.map((m) => m.fee)).toEqual(run.doc.moves.map(() => '0.00'));
    const prefix = stack.env['QUEUE_PREFIX'] as string;
    expect(await stack.client.hget(`${prefix}:batch:${batchId}`, 'via')).toBe('cctp');
    const ids = await stack.client.zrange(`${prefix}:batch:${batchId}:rows`, 0, -1);
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) expect(await stack.client.hget(`${prefix}:t:${batchId}:${id}`, 'via')).toBe('cctp');
    const reader = createBatchReader({ redis: stack.client, prefix });
    expect((await reader.summary(batchId))?.via).toBe('cctp');
    expect((await runCli(['cancel', batchId], stack.env)).code).toBe(0);
  }, 60_000);
});
