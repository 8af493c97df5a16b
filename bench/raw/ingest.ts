/**
 * The home-made alternative to `usdc-batch enqueue`: read the CSV, one BullMQ job per row (the row
 * itself as job data, since there is no transfer record to point at), `addBulk` in chunks of 1000.
 * No validation, no batch record, no payout-id claims. Same job ids and options as the product's
 * producer, so BullMQ does the same work per job.
 *
 * usage: node bench/raw/ingest.ts FILE.csv   (REDIS_URL, QUEUE_PREFIX from the environment)
 */
import { readFileSync } from 'node:fs';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { TRANSFER_JOB_OPTIONS } from '../../src/queue/producer.ts';

const file = process.argv[2];
const url = process.env['REDIS_URL'];
const prefix = process.env['QUEUE_PREFIX'] ?? 'raw';
if (!file || !url) {
  process.stderr.write('usage: REDIS_URL=… node bench/raw/ingest.ts FILE.csv\n');
  process.exit(2);
}
const CHUNK = 1000;

const connection = new Redis(url, { maxRetriesPerRequest: 2 });
const queue = new Queue('raw-transfers', { connection, prefix });
queue.on('error', () => {});

const lines = readFileSync(file, 'utf8').split('\n');
const header = (lines[0] ?? '').split(',');
let added = 0;
let chunk: { name: string; data: Record<string, string>; opts: object }[] = [];
const flush = async () => {
  if (chunk.length === 0) return;
  await queue.addBulk(chunk);
  added += chunk.length;
  chunk = [];
};
for (let i = 1; i < lines.length; i++) {
  const line = lines[i] as string;
  if (line === '') continue;
  const cells = line.split(',');
  const data: Record<string, string> = {};
  header.forEach((h, j) => (data[h] = cells[j] ?? ''));
  chunk.push({ name: 'transfer', data, opts: { ...TRANSFER_JOB_OPTIONS, jobId: `raw/${data['id']}` } });
  if (chunk.length === CHUNK) await flush();
}
await flush();
await queue.close();
await connection.quit();
process.stdout.write(`${JSON.stringify({ added })}\n`);
