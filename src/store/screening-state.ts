import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

/*
 * The sanctions lists a worker screens with (docs/screening.md; docs/data-model.md `P:screening`):
 * a STRING holding JSON, written by each worker when it loads or reloads its lists and every
 * PUBLISH_EVERY_MS with its controls, read by the status document, `/metrics` and `screening`.
 * Every worker runs with the same SCREENING_* settings (a difference is control drift, promise 5),
 * so the last writer speaks for all.
 */

/** One list as published: its file, format, date of issue and addresses by kind. */
export type PublishedList = {
  readonly name: string;
  readonly format: string;
  /** `YYYY-MM-DD`. */
  readonly date: string;
  /** The date of issue, ms. */
  readonly issuedAt: number;
  readonly evm: number;
  readonly solana: number;
  readonly other: number;
};

export type ScreeningState = {
  readonly lists: readonly PublishedList[];
  readonly maxAgeMs: number;
  readonly onchain: boolean;
  /** When it was written, ms. */
  readonly at: number;
};

export async function publishScreening(redis: Redis, prefix: string, state: ScreeningState): Promise<void> {
  await redis.set(keys(prefix).screening, JSON.stringify(state));
}

/** What the workers published; null when none has (or the value is not of this shape). */
export async function readScreening(redis: Redis, prefix: string): Promise<ScreeningState | null> {
  return parseScreening(await redis.get(keys(prefix).screening));
}

export function parseScreening(text: string | null): ScreeningState | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<ScreeningState>;
    if (!Array.isArray(v.lists) || typeof v.maxAgeMs !== 'number' || typeof v.onchain !== 'boolean')
      return null;
    const lists = v.lists.filter(
      (l: Partial<PublishedList>) =>
        typeof l.name === 'string' && typeof l.date === 'string' && typeof l.issuedAt === 'number',
    );
    return { lists, maxAgeMs: v.maxAgeMs, onchain: v.onchain, at: Number(v.at) || 0 };
  } catch {
    return null;
  }
}

/** The oldest list's age at `now`, seconds; null without lists. */
export function listAgeSeconds(state: ScreeningState | null, now: number): number | null {
  if (!state || state.lists.length === 0) return null;
  return Math.max(0, Math.floor((now - Math.min(...state.lists.map((l) => l.issuedAt))) / 1000));
}
