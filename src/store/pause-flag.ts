import type { Redis } from 'ioredis';
import { keys } from './keys.ts';

/*
 * `P:paused` (docs/operating.md "The commands" `pause`): while it exists workers take no transfer (the take script
 * checks that it exists). Its value says since when and by whom: `{"since":<ms>,"by":"cli:<name>"}`;
 * a value written before that was the time alone (`<ms>`), read as paused by nobody known.
 */

/** Processing is paused: since when (ms) and by whom (`cli:<name>`; null when not recorded). */
export type PauseState = { readonly since: number; readonly by: string | null };

/** The flag's value as a PauseState; null when it is not set. */
export function parsePause(raw: string | null): PauseState | null {
  if (raw === null) return null;
  if (/^[0-9]+$/.test(raw)) return { since: Number(raw), by: null };
  try {
    const v = JSON.parse(raw) as { since?: unknown; by?: unknown };
    const since = typeof v.since === 'number' && Number.isFinite(v.since) ? v.since : 0;
    return { since, by: typeof v.by === 'string' ? v.by : null };
  } catch {
    // Set, but unreadable: still paused (the workers only look at whether it exists).
    return { since: 0, by: null };
  }
}

export async function readPause(redis: Redis, prefix: string): Promise<PauseState | null> {
  return parsePause(await redis.get(keys(prefix).paused));
}

/**
 * Pauses processing unless it is paused already: true when this call paused it (an earlier pause
 * keeps its time and who).
 */
export async function writePause(redis: Redis, prefix: string, state: PauseState): Promise<boolean> {
  return (await redis.set(keys(prefix).paused, JSON.stringify(state), 'NX')) === 'OK';
}

/** Resumes processing: true when it was paused. */
export async function clearPause(redis: Redis, prefix: string): Promise<boolean> {
  return (await redis.del(keys(prefix).paused)) > 0;
}
