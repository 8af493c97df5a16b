/**
 * `node bench/rebalance-plan.ts`: how long `rebalance --dry-run` takes to plan a 5-chain policy for
 * a treasury of 8 EVM owners and the Solana keypair, with the transfer service answering after
 * 200 ms (the sandbox's `--latency`): every balance read and the first estimate of each move are
 * asked at once, so a plan should answer within 2 s. Runs the real sandbox (anvil, LiteSVM) and a
 * private redis-server; prints each run's time and exits 1 when the median is over the bound.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatePrivateKey } from 'viem/accounts';
import { loadConfig } from '../src/config/load-config.ts';
import { createServiceClient } from '../src/service/service-client.ts';
import { serviceEstimator } from '../src/treasury/planner.ts';
import { parsePolicy } from '../src/treasury/policy.ts';
import { runRebalance } from '../src/treasury/rebalance-run.ts';
import { solanaKeypairFile } from '../support/fixtures.ts';
import { cleanupAll } from './lib/cleanup.ts';
import { productEnv, startBenchRedis, startBenchSandbox } from './lib/stack.ts';

const LATENCY_MS = 200;
const OWNERS = 8;
const RUNS = 5;
const BOUND_MS = 2_000;

const POLICY = `name: bench
chains:
  ETH: { target: 5000000 }
  BASE: { target: 5000000 }
  ARB: { target: 5000000 }
  POLYGON: { min: 9000000, target: 9500000 }
  SOLANA: { min: 1000, target: 250000 }
max_fee_bps: 30
`;

const log = (s: string) => process.stderr.write(`[bench rebalance] ${s}\n`);
const dir = mkdtempSync(join(tmpdir(), 'usdc-bench-rebalance-'));
let code = 0;
try {
  const [sandbox, redis] = await Promise.all([startBenchSandbox(LATENCY_MS), startBenchRedis()]);
  const sol = solanaKeypairFile(dir);
  const env = {
    ...productEnv({ redisUrl: redis.url, prefix: 'benchrb', sandbox, solanaKeyFile: sol.file }),
    EVM_PRIVATE_KEY: Array.from({ length: OWNERS }, () => generatePrivateKey()).join(','),
    SOLANA_RPC_URL: sandbox.rpc.SOLANA,
  };
  const config = loadConfig(env, { service: true });
  const parsed = parsePolicy(POLICY, 'bench.yaml');
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  const client = createServiceClient({
    baseUrl: config.transferApiUrl as string,
    apiKey: config.transferApiKey!,
    connectTimeoutMs: 5_000,
    responseTimeoutMs: 10_000,
  });
  const deps = { redis: redis.client, prefix: 'benchrb', config, estimate: serviceEstimator(client) };
  // The first run meets the owners (the sandbox funds each at its first balanceOf): not measured.
  const warm = await runRebalance(deps, parsed.policy, { mode: 'dry-run', actor: 'bench' });
  log(`plan: ${warm.plan.moves.map((m) => `${m.id} ${m.amount}`).join(', ')}`);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const r = await runRebalance(deps, parsed.policy, { mode: 'dry-run', actor: 'bench' });
    times.push(performance.now() - t0);
    if (r.plan.moves.length === 0) throw new Error('the bench policy planned no move');
  }
  client.close();
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] as number;
  log(
    `${OWNERS} owners × 4 EVM chains + Solana, service latency ${LATENCY_MS} ms: ` +
      `median ${median.toFixed(0)} ms, max ${(sorted[sorted.length - 1] as number).toFixed(0)} ms (bound ${BOUND_MS} ms)`,
  );
  if (median > BOUND_MS) code = 1;
} catch (err) {
  log(`failed: ${(err as Error).stack ?? String(err)}`);
  code = 1;
} finally {
  await cleanupAll();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
