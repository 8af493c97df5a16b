import { randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync } from 'node:fs';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { Config } from '../../config/config.ts';
import { readEnv, type Env } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { EVM_CHAINS } from '../../domain/chains.ts';
import { displayUrl } from '../../domain/url-display.ts';
import { enqueueValidated } from '../../ingest/enqueue-batch.ts';
import { validateCsv } from '../../ingest/validate-input.ts';
import { signingKeys } from '../../signing/evm/keystore.ts';
import { evmAddressOfKey } from '../../signing/evm/owner-address.ts';
import { createLogger } from '../../log/logger.ts';
import { createProducer } from '../../queue/producer.ts';
import { startWorker, type RunningWorker } from '../../worker/start-worker.ts';
import type * as SandboxModule from '../../sandbox/sandbox.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { balancesTable, demoAccounts, readChainBalances } from '../demo-balances.ts';
import { createBatchReader, type BatchReader, type BatchStatus } from '../../present/batch-status.ts';
import { EXIT } from '../exit-codes.ts';
import { progressBar, table } from '../format.ts';
import { cliActor } from '../context.ts';
import { endOnSignals, holdUntilExit, isEnding, removeOnExit } from '../lifetime.ts';
import { startPrivateRedis, type PrivateRedis } from '../private-redis.ts';
import { loadSandboxModule } from '../sandbox-packages.ts';
import { makeThrowawayKeys, type ThrowawayKeys } from '../throwaway-keys.ts';
import { counted } from '../../domain/plural.ts';

/** What the demo's throwaway treasury holds on each chain before the batch. */
const DEMO_TREASURY_USDC = 10_000_000_000n;
const SAMPLE = fileURLToPath(new URL('../../../samples/payouts.csv', import.meta.url));

/** The demo's last line: where to look next (its Redis and chains are gone when it exits). */
const NEXT_STEPS =
  'next: run it yourself in three terminals (docs/getting-started.md "First run"): `npx usdc-batch sandbox --redis --write-env sandbox.env`, ' +
  'then `usdc-batch worker`, `usdc-batch enqueue FILE.csv --wait` and `usdc-batch status BATCH_ID` (intents settle after the batch completes)';

type Counts = { submitted: number; failed: number; rejected: number; needs_review: number };

/**
 * The demo's progress on stderr: a bar redrawn in place on a terminal; otherwise (a pipe, a file)
 * a plain line when the count of finished transfers has changed, at most every 2 s, and at the end.
 */
function progressReporter(total: number) {
  const tty = process.stderr.isTTY === true;
  let lastDone = -1;
  let lastAt = 0;
  const finished = (c: Counts) => c.submitted + c.failed + c.rejected + c.needs_review;
  return {
    show(c: Counts): void {
      // Ending (Ctrl-C, a closed pipe): the count is not news any more.
      if (isEnding()) return;
      const done = finished(c);
      if (tty) process.stderr.write(`\r${progressBar(done, total)}`);
      else if (done !== lastDone && Date.now() - lastAt >= 2_000) {
        process.stderr.write(`progress: ${done}/${total} transfers finished\n`);
        lastDone = done;
        lastAt = Date.now();
      }
    },
    end(c: Counts): void {
      const done = finished(c);
      if (tty) process.stderr.write(`\r${progressBar(done, total)}\n\n`);
      else process.stderr.write(`progress: ${done}/${total} transfers finished\n`);
    },
  };
}

/** What the demo has started so far: each is stopped once, whatever ends the demo. */
type Started = {
  privateRedis?: PrivateRedis;
  sandbox?: Sandbox;
  worker?: RunningWorker;
  client?: Redis;
  producer?: ReturnType<typeof createProducer>;
};

/** Stops what `started` holds: the worker and producer first, the Redis last. */
async function stopStarted(started: Started): Promise<void> {
  await started.worker?.close().catch(() => {});
  await started.producer?.close().catch(() => {});
  started.client?.disconnect();
  await started.sandbox?.close().catch(() => {});
  await started.privateRedis?.stop();
}

/** The demo's running parts, once all have started. */
type DemoParts = {
  readonly sandbox: Sandbox;
  readonly client: Redis;
  readonly producer: ReturnType<typeof createProducer>;
  readonly config: Config;
  readonly throwaway: ThrowawayKeys;
};

const out = (s: string) => process.stdout.write(s);

/**
 * `usdc-batch demo`: the whole thing on embedded defaults — a private Redis (unless REDIS_URL is
 * set), the sandbox, a worker with throwaway keys, the bundled sample CSV, a progress bar and a
 * summary table. Everything it started is stopped on exit or Ctrl-C.
 */
export async function run(): Promise<number> {
  // Loaded here, not imported: a production install has no anvil or LiteSVM (exit 2, saying how to add them).
  const sandboxModule = await loadSandboxModule('demo');
  if (!sandboxModule) return EXIT.usage;
  const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-demo-'));
  // The throwaway keys live in `dir`: it goes whatever ends the demo (cli/lifetime.ts).
  const removeDir = removeOnExit(dir);
  const started: Started = {};
  // Everything it started, stopped once: at the end, on Ctrl-C or SIGTERM, or when the reader of
  // its output goes away (`demo | head`).
  const release = holdUntilExit(async () => {
    await stopStarted(started);
    removeDir();
  });
  const stopSignals = endOnSignals('interrupted: stopping everything the demo started…');
  try {
    const parts = await startParts(sandboxModule.createSandbox, dir, started);
    return await payTheSample(parts);
  } finally {
    stopSignals();
    await release();
  }
}

/** Starts the Redis, the sandbox, a worker with throwaway keys and a producer, saying so on stdout. */
async function startParts(
  createSandbox: typeof SandboxModule.createSandbox,
  dir: string,
  started: Started,
): Promise<DemoParts> {
  const outside = readEnv();
  const redisUrl = await startRedis(dir, outside['REDIS_URL'], started);
  const sandbox = await createSandbox({ port: 0, statusStepMs: 1_000 });
  started.sandbox = sandbox;
  const anvils = EVM_CHAINS.map((c) => `${c} (anvil pid ${sandbox.nodes.evm[c].pid ?? '?'})`).join(', ');
  out(
    `started the transfer-service sandbox at ${sandbox.url} on local chains: ${anvils}, SOLANA (LiteSVM)\n`,
  );

  // Throwaway keys: a random EVM treasury key and a fresh Solana keypair, never written outside `dir`.
  const throwaway = makeThrowawayKeys(dir);
  const env = workerEnv(redisUrl, sandbox, throwaway, outside);
  const config = loadConfig(env, { service: true, signingKey: true, keys: signingKeys });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  started.worker = await startWorker(config, logger);
  out(`started a worker with throwaway keys (Solana wallet ${throwaway.solanaAddress})\n\n`);

  const client = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  started.client = client;
  client.on('error', () => {});
  const producer = createProducer({ connection: client, prefix: config.queuePrefix });
  started.producer = producer;
  return { sandbox, client, producer, config, throwaway };
}

/** REDIS_URL when it is set; otherwise a private, durable Redis with its data in `dir`. */
async function startRedis(dir: string, outsideUrl: string | undefined, started: Started): Promise<string> {
  if (outsideUrl) {
    // Which one, by scheme, host and port only: its user part may hold a password.
    out(`using REDIS_URL ${displayUrl(outsideUrl)}\n`);
    return outsideUrl;
  }
  started.privateRedis = await startPrivateRedis(dir);
  out(`started a private, durable Redis at ${started.privateRedis.url} (data in ${dir})\n`);
  return started.privateRedis.url;
}

/** The worker's environment: the sandbox's service and chains, the throwaway keys, a fresh queue prefix. */
function workerEnv(
  redisUrl: string,
  sandbox: Sandbox,
  throwaway: ThrowawayKeys,
  outside: Env,
): Record<string, string> {
  const env: Record<string, string> = {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `demo-${randomBytes(3).toString('hex')}`,
    TRANSFER_API_URL: sandbox.url,
    TRANSFER_API_KEY: sandbox.apiKey,
    PERMIT_SPENDER: sandbox.spender,
    SOLANA_RPC_URL: sandbox.rpcUrl('SOLANA'),
    // The second road: the sandbox's attestation API in front of its CCTP contracts.
    CCTP_API_URL: sandbox.cctp.apiUrl,
    EVM_PRIVATE_KEY_FILE: throwaway.evmKeyFile,
    SOLANA_KEYPAIR_FILE: throwaway.solanaKeyFile,
    LOG_LEVEL: outside['LOG_LEVEL'] ?? 'warn',
    ALLOW_VOLATILE_REDIS: outside['REDIS_URL'] ? (outside['ALLOW_VOLATILE_REDIS'] ?? 'false') : 'false',
  };
  for (const chain of EVM_CHAINS) env[`EVM_RPC_URL_${chain}`] = sandbox.rpcUrl(chain);
  return env;
}

/**
 * Funds the throwaway treasury, enqueues the sample, follows the batch to its end and prints its
 * transfers, its totals and the balances read from the chains before and after.
 */
async function payTheSample(parts: DemoParts): Promise<number> {
  const { sandbox, client, producer, config, throwaway } = parts;
  const input = await validateCsv(createReadStream(SAMPLE), {});
  // The throwaway treasury starts with DEMO_TREASURY_USDC on every chain it pays from.
  const treasury = {
    evm: evmAddressOfKey(throwaway.evmPrivateKey),
    solana: throwaway.solanaAddress,
  };
  const accounts = demoAccounts(input.transfers, treasury);
  for (const a of accounts.filter((x) => x.who === 'treasury'))
    await sandbox.admin.setBalance(a.chain, a.address, DEMO_TREASURY_USDC);
  const before = await readChainBalances(sandbox, accounts);
  const outcome = await enqueueValidated(
    { redis: client, prefix: config.queuePrefix, jobs: producer, config },
    input,
    { source: 'csv', actor: cliActor(config.operatorName) },
  );
  if (outcome.status !== 'enqueued' || !outcome.batchId) {
    process.stderr.write(`the sample did not enqueue: ${JSON.stringify(outcome.errors)}\n`);
    return EXIT.rejected;
  }
  out(`enqueued samples/payouts.csv as batch ${outcome.batchId}: ${counted(outcome.accepted, 'transfer')}\n`);

  const reader = createBatchReader({ redis: client, prefix: config.queuePrefix });
  const deadline = Date.now() + 120_000;
  const doc = await followBatch(reader, outcome.batchId, outcome.accepted, deadline);
  if (!doc) return EXIT.rejected;
  const c = doc.counts;
  out(`${batchTable(doc)}\n\n`);
  out(
    `submitted ${c.submitted}, failed ${c.failed}, rejected ${c.rejected}, needs_review ${c.needs_review}; ` +
      `total ${doc.totals.amount} USDC, fees ${doc.totals.fee ?? '—'}, net ${doc.totals.net_receive ?? '—'}\n\n`,
  );
  // The service pays each recipient on its chain when the intent reaches `minted` (2 s here).
  while (sandbox.ledger().some((e) => e.destination_tx === null) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 200));
  const after = await readChainBalances(sandbox, accounts);
  out(`USDC balances read from the chains (anvil, LiteSVM), before and after:\n`);
  out(`${balancesTable(accounts, before, after)}\n\n`);
  const moved = await moveThroughCctp(parts, treasury.evm, deadline + 60_000);
  out(`${NEXT_STEPS}\n`);
  return doc.complete && c.submitted === outcome.accepted && moved ? EXIT.ok : EXIT.rejected;
}

/** The demo's move on the second road: the treasury's own USDC from BASE to ARB, as rebalancing would. */
const CCTP_MOVE = { id: 'rb-BASE-ARB', from: 'BASE', to: 'ARB', amount: '250.00' } as const;
/** Native gas for the owner's approve, burn and mint (the CCTP road is not gasless): 10 ETH. */
const DEMO_OWNER_GAS_WEI = 10n ** 19n;

/**
 * The second road (docs/cctp.md): one move of the treasury's own USDC through Circle's CCTP v2
 * (Fast) on the sandbox's contracts — the owner approves and burns on BASE, the sandbox's attestation
 * API attests, the owner mints on ARB — followed until minted, with the balances before and after.
 * True when it was minted.
 */
async function moveThroughCctp(parts: DemoParts, owner: string, deadline: number): Promise<boolean> {
  const { sandbox, client, producer, config } = parts;
  const csv = `id,from,to,amount,recipient\n${CCTP_MOVE.id},${CCTP_MOVE.from},${CCTP_MOVE.to},${CCTP_MOVE.amount},${owner}\n`;
  const input = await validateCsv(Readable.from([csv]), {});
  for (const chain of [CCTP_MOVE.from, CCTP_MOVE.to])
    await sandbox.admin.setNativeBalance(chain, owner, DEMO_OWNER_GAS_WEI);
  const accounts = demoAccounts(input.transfers, { evm: owner, solana: parts.throwaway.solanaAddress });
  const before = await readChainBalances(sandbox, accounts);
  const outcome = await enqueueValidated(
    { redis: client, prefix: config.queuePrefix, jobs: producer, config },
    input,
    {
      source: 'csv',
      actor: cliActor(config.operatorName),
      via: 'cctp-fast',
    },
  );
  if (outcome.status !== 'enqueued' || !outcome.batchId) {
    process.stderr.write(`the CCTP move did not enqueue: ${JSON.stringify(outcome.errors)}\n`);
    return false;
  }
  out(
    `the second road: moved ${CCTP_MOVE.amount} USDC of the treasury's own from ${CCTP_MOVE.from} to ${CCTP_MOVE.to} through Circle's CCTP v2 (cctp-fast) as batch ${outcome.batchId}: ` +
      `the owner approves and burns on ${CCTP_MOVE.from} and mints on ${CCTP_MOVE.to}, paying the gas itself; the fee is Circle's\n`,
  );
  const reader = createBatchReader({ redis: client, prefix: config.queuePrefix });
  let doc = await reader.status(outcome.batchId);
  while (
    doc &&
    !(
      doc.complete && doc.transfers.every((t) => t.intent_status === 'complete' || t.state !== 'submitted')
    ) &&
    Date.now() < deadline
  ) {
    await new Promise((r) => setTimeout(r, 200));
    doc = await reader.status(outcome.batchId);
  }
  if (!doc) return false;
  out(`${batchTable(doc)}\n\n`);
  const after = await readChainBalances(sandbox, accounts);
  out(`USDC balances read from the chains, before and after the CCTP move:\n`);
  out(`${balancesTable(accounts, before, after)}\n\n`);
  return doc.transfers.every((t) => t.state === 'submitted' && t.intent_status === 'complete');
}

/** The batch's status once complete (or at `deadline`), its progress shown on stderr meanwhile. */
async function followBatch(
  reader: BatchReader,
  batchId: string,
  total: number,
  deadline: number,
): Promise<BatchStatus | undefined> {
  const progress = progressReporter(total);
  let summary = await reader.summary(batchId);
  while (summary && !summary.complete && Date.now() < deadline) {
    progress.show(summary.counts);
    await new Promise((r) => setTimeout(r, 200));
    summary = await reader.summary(batchId);
  }
  const doc = await reader.status(batchId);
  if (doc) progress.end(doc.counts);
  return doc;
}

/** One line per transfer: its route, amount, fee, state, intent and source-chain transaction. */
function batchTable(doc: BatchStatus): string {
  return table(
    ['id', 'route', 'amount', 'fee', 'state', 'intent_id', 'intent', 'tx'],
    doc.transfers.map((t) => [
      t.id,
      `${t.from}→${t.to}`,
      t.amount,
      t.fee?.total ?? null,
      t.state,
      t.intent_id,
      t.intent_status,
      // The source chain's transaction: a hash on EVM, a signature on Solana.
      t.tx_hash ?? t.tx_signature,
    ]),
  );
}
