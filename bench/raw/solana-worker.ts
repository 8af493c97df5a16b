/**
 * The home-made alternative to `usdc-batch worker` for SOLANA-source rows: a plain BullMQ worker
 * making the same three calls (estimate, build-tx, submit), signing the built transaction with
 * @solana/kit — and nothing else: no transfer record, no saved steps, no transaction policy, no fee
 * guard, no intent following. Exits after `EXPECT` jobs have finished and prints, as JSON, when the
 * first job started and the last one ended.
 *
 * env: REDIS_URL, QUEUE_PREFIX, QUEUE, TRANSFER_API_URL, TRANSFER_API_KEY, SOLANA_KEYPAIR_FILE,
 * CONCURRENCY, EXPECT
 */
import { readFileSync } from 'node:fs';
import {
  createKeyPairFromBytes,
  getAddressFromPublicKey,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  partiallySignTransaction,
} from '@solana/kit';
import { Worker, type Job } from 'bullmq';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const baseUrl = env('TRANSFER_API_URL');
const apiKey = env('TRANSFER_API_KEY');
const expect = Number(env('EXPECT'));
const keyPair = await createKeyPairFromBytes(
  Uint8Array.from(JSON.parse(readFileSync(env('SOLANA_KEYPAIR_FILE'), 'utf8')) as number[]),
);
const wallet = await getAddressFromPublicKey(keyPair.publicKey);
const decoder = getTransactionDecoder();

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${String(json['code'] ?? '')}`);
  return json;
}

let first = Number.POSITIVE_INFINITY;
let cpuAtFirst: NodeJS.CpuUsage | undefined;
let last = 0;
let done = 0;
let failed = 0;

const worker = new Worker(
  env('QUEUE'),
  async (job: Job) => {
    if (cpuAtFirst === undefined) {
      first = Date.now();
      cpuAtFirst = process.cpuUsage();
    }
    const { to, amount, recipient } = job.data as { to: string; amount: string; recipient: string };
    await post('/sdk/v1/estimate', { from: 'SOLANA', to, amount });
    const built = await post('/sdk/v1/solana/build-tx', { to, amount, from_wallet: wallet, recipient });
    const tx = decoder.decode(Buffer.from(String(built['transaction']), 'base64'));
    const signed = await partiallySignTransaction([keyPair], tx);
    const sent = await post('/sdk/v1/solana/submit', {
      intent_id: built['intent_id'],
      signed_transaction: getBase64EncodedWireTransaction(signed),
    });
    return sent['intent_id'];
  },
  {
    connection: { url: env('REDIS_URL'), maxRetriesPerRequest: null },
    prefix: env('QUEUE_PREFIX'),
    concurrency: Number(env('CONCURRENCY')),
  },
);
worker.on('error', () => {});
const finished = new Promise<void>((resolve) => {
  const tick = () => {
    last = Date.now();
    if (done + failed >= expect) resolve();
  };
  worker.on('completed', () => {
    done++;
    tick();
  });
  worker.on('failed', (_job, err) => {
    failed++;
    if (failed <= 3) process.stderr.write(`job failed: ${err.message}\n`);
    tick();
  });
});
await finished;
const cpu = process.cpuUsage(cpuAtFirst);
await worker.close();
const cpuMs = (cpu.user + cpu.system) / 1000;
process.stdout.write(`${JSON.stringify({ first, last, done, failed, cpuMs })}\n`);
process.exit(0);
