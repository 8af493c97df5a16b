import type { Redis } from 'ioredis';
import type { Chain } from '../../src/domain/chains.ts';
import { queueNameFor, transferJobId } from '../../src/queue/jobs.ts';
import { keys } from '../../src/store/keys.ts';
import { median } from './stats.ts';

/**
 * The worker's own part of an owner's serial section, read from the transfer jobs' step logs (each
 * line stamped by the worker, ms resolution): from the `answer:` line of permit n (its answer
 * parsed) to the `send:` line of permit n + 1 (its mark written, just before its request goes).
 * The rest of the gap the sandbox's ledger shows (its acceptance of n → the arrival of n + 1) is
 * the two HTTP hops and the sandbox's own queueing, on both sides of its clock.
 */
export type WorkerGaps = ReadonlyMap<string, { readonly gapMs: number }>;

const SEND = /^(\S+) send: .*\(permit nonce ([0-9]+)\)/;
const ANSWER = /^(\S+) answer: accepted/;

type Times = { send?: number; answer?: number };

/** When permit `nonce` was last sent and answered, from one job's log lines. */
function timesOf(lines: readonly string[]): { nonce: bigint; times: Times } | undefined {
  let nonce: bigint | undefined;
  const times: Times = {};
  for (const line of lines) {
    const sent = SEND.exec(line);
    if (sent) {
      nonce = BigInt(sent[2] as string);
      times.send = Date.parse(sent[1] as string);
      continue;
    }
    const answered = ANSWER.exec(line);
    if (answered) times.answer = Date.parse(answered[1] as string);
  }
  return nonce === undefined ? undefined : { nonce, times };
}

/** Per source chain (one owner each): the median worker gap over consecutive nonces both logged. */
export async function workerGaps(
  client: Redis,
  prefix: string,
  batchId: string,
  chains: readonly string[],
): Promise<WorkerGaps> {
  const ids = await client.zrange(keys(prefix).batchRows(batchId), 0, -1);
  const out = new Map<string, { gapMs: number }>();
  for (const chain of chains) {
    const q = `${prefix}:${queueNameFor(chain as Chain)}`;
    const pipe = client.pipeline();
    for (const id of ids) pipe.lrange(`${q}:${transferJobId(batchId, id)}:logs`, 0, -1);
    const byNonce = new Map<bigint, Times>();
    for (const [, lines] of (await pipe.exec()) ?? []) {
      const t = timesOf((lines as string[] | null) ?? []);
      if (t) byNonce.set(t.nonce, t.times);
    }
    const gaps: number[] = [];
    for (const [nonce, t] of byNonce) {
      const next = byNonce.get(nonce + 1n);
      if (t.answer !== undefined && next?.send !== undefined) gaps.push(next.send - t.answer);
    }
    if (gaps.length > 0) out.set(chain, { gapMs: median(gaps) });
  }
  return out;
}
