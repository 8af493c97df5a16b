import { inLanes } from '../domain/pool.ts';

/**
 * A loop that, about every `tickMs`, claims the items due and handles them, at most `concurrency`
 * at a time; a full claim is followed at once by the next (a backlog drains without waiting a
 * tick). An item whose handling throws is reported and left: its claim lease brings it back.
 */
export type FollowLoopOptions<T> = {
  readonly tickMs: number;
  readonly limit: number;
  readonly concurrency: number;
  readonly claim: (now: number, limit: number) => Promise<readonly T[]>;
  readonly handle: (item: T) => Promise<void>;
  /** Gives back claimed items the loop did not handle because it was stopped (due again at once). */
  readonly release: (items: readonly T[]) => Promise<void>;
  readonly onError: (err: unknown, item?: T) => void;
};

export type FollowLoop = { stop(): Promise<void> };

export function startFollowLoop<T>(o: FollowLoopOptions<T>): FollowLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick(o, () => stopped).then((full) => {
        running = undefined;
        schedule(full ? 0 : o.tickMs);
      });
    }, ms);
    timer.unref();
  };
  schedule(0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

/** One round: true when the claim was full (more may be due). */
async function tick<T>(o: FollowLoopOptions<T>, stopped: () => boolean): Promise<boolean> {
  let items: readonly T[];
  try {
    items = await o.claim(Date.now(), o.limit);
  } catch (err) {
    o.onError(err);
    return false;
  }
  const left: T[] = [];
  // Each item's errors are caught here, so the lanes never stop early.
  await inLanes(items, o.concurrency, async (item) => {
    if (stopped()) {
      left.push(item);
      return;
    }
    try {
      await o.handle(item);
    } catch (err) {
      o.onError(err, item);
    }
  });
  if (left.length > 0) await o.release(left).catch((err: unknown) => o.onError(err));
  return items.length >= o.limit && !stopped();
}
