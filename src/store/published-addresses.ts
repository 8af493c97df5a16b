import type { Redis } from 'ioredis';
import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';

/*
 * The treasury's public addresses as the workers publish them (docs/data-model.md,
 * `P:treasury:addresses`), for the processes that hold no key (docs/keys.md):
 * a ZSET whose members are `evm:<position>:<owner>` (the owner's place in that worker's configured
 * order, from 1) and `solana:<address>`, scored with the time (ms) a worker holding that key last
 * said so — at its start and every PUBLISH_EVERY_MS while it runs. What the workers "last
 * published" is every member within PUBLISHED_TOGETHER_MS of the newest: the running workers'
 * addresses while any runs, the last ones' once all have stopped, and a key a worker no longer
 * holds drops out once its successor has published for that long.
 */

export const PUBLISH_EVERY_MS = 10_000;
/** Members this close to the newest were published by workers running together. */
export const PUBLISHED_TOGETHER_MS = 35_000;
/** Members not refreshed for a day are removed by the next publication. */
const FORGET_AFTER_MS = 24 * 3600 * 1000;

const addressesKey = (prefix: string) => `${prefix}:treasury:addresses`;

export type PublishedAddresses = {
  /** EVM owners, checksummed, in the order the workers configured them. */
  readonly evm: readonly string[];
  readonly solana: string | undefined;
  /** When the newest of them was published (ms); null when none was. */
  readonly at: number | null;
};

/** One worker's public addresses, stamped `now`. */
export async function publishAddresses(
  redis: Redis,
  prefix: string,
  addresses: { readonly evm: readonly string[]; readonly solana: string | undefined },
  now: number,
): Promise<void> {
  const members = [
    ...addresses.evm.map((owner, i) => `evm:${i + 1}:${owner}`),
    ...(addresses.solana !== undefined ? [`solana:${addresses.solana}`] : []),
  ];
  if (members.length === 0) return;
  const key = addressesKey(prefix);
  await redis
    .multi()
    .zadd(key, ...members.flatMap((m) => [now, m]))
    .zremrangebyscore(key, '-inf', now - FORGET_AFTER_MS)
    .exec();
}

type Member =
  | { kind: 'evm'; position: number; address: string; at: number }
  | { kind: 'solana'; address: string; at: number };

/** A stored member, parsed; undefined for one that is not ours or not well-formed. */
function parseMember(member: string, score: string): Member | undefined {
  const at = Number(score);
  if (!Number.isFinite(at)) return undefined;
  const evm = /^evm:([1-9][0-9]{0,5}):(0x[0-9a-fA-F]{40})$/.exec(member);
  if (evm) {
    const checked = checkEvmAddress(evm[2] as string);
    return checked.ok ? { kind: 'evm', position: Number(evm[1]), address: checked.value, at } : undefined;
  }
  if (member.startsWith('solana:')) {
    const checked = checkSolanaAddress(member.slice('solana:'.length));
    return checked.ok ? { kind: 'solana', address: checked.value, at } : undefined;
  }
  return undefined;
}

/** What the workers last published (above); empty lists when no worker ever did. */
export async function readPublishedAddresses(redis: Redis, prefix: string): Promise<PublishedAddresses> {
  const flat = await redis.zrange(addressesKey(prefix), 0, -1, 'WITHSCORES');
  const members: Member[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const m = parseMember(flat[i] as string, flat[i + 1] as string);
    if (m) members.push(m);
  }
  if (members.length === 0) return { evm: [], solana: undefined, at: null };
  const newest = Math.max(...members.map((m) => m.at));
  const recent = members.filter((m) => m.at >= newest - PUBLISHED_TOGETHER_MS);
  const evm: string[] = [];
  for (const m of recent
    .flatMap((x) => (x.kind === 'evm' ? [x] : []))
    .sort((a, b) => a.position - b.position || b.at - a.at)) {
    if (!evm.includes(m.address)) evm.push(m.address);
  }
  const solana = recent
    .flatMap((x) => (x.kind === 'solana' ? [x] : []))
    .sort((a, b) => b.at - a.at)[0]?.address;
  return { evm, solana, at: newest };
}
