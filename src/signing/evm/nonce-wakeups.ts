import type { Redis } from 'ioredis';
import type { Logger } from '../../log/logger.ts';
import { duplicateConnection } from '../../store/redis-endpoint.ts';

/**
 * Wake-ups for transfers waiting on a nonce lease: a release or commit publishes the pool's key and
 * one local waiter on that key (the longest waiting one not yet woken) tries again at once, so the
 * next holder starts within a round trip instead of a polling interval, without every waiter of
 * every process hitting Redis at once. A commit that hands the lease to a preparer publishes
 * "<key>\n<preparer>": the preparer's waiter (in whichever process it is) is woken, and one other
 * waiter too, to take the prepare slot the hand-off left free. When the commit also gave that slot
 * to the waiter next in line, it publishes "<key>\n<preparer>\n<next in line>\n<its nonce>": that
 * waiter is woken with the nonce to prepare, and nobody else. Without the subscription waiters
 * still poll: slower, never stuck.
 *
 * A preparer in the committing process is woken sooner, as the commit is sent (`wakePreparer`,
 * called by nonce-lease.ts right after it issued the commit script on the manager's connection):
 * its `confirm()` then goes to Redis behind the commit on that connection, so the hand-off costs
 * one round trip where the commit's answer, then the published message, then the confirm took
 * three hops. Its wake is a guess that the commit hands it the lease — the pool's slot says so at
 * the moment of the commit —, and `confirm()` checks it in Redis before anything is sent (a slot
 * voided just before: confirm says false, nothing is sent, the transfer comes again in order).
 */
export type Wakeups = {
  /** Subscribes once (on first use); later calls return the same promise. */
  ready(): Promise<void>;
  /** Queues a waiter on `key` for `holder`. */
  arm(key: string, holder: string): Waiter;
  /** How many waiters are queued on `key` now. */
  count(key: string): number;
  /**
   * Wakes, by name, the local waiter on `key` that prepared `nonce` (the commit of nonce − 1 was
   * just sent on the connection its confirm will use), if there is one.
   */
  wakePreparer(key: string, nonce: bigint): void;
  /** Wakes every waiter (closing) and drops the subscription. */
  close(): Promise<void>;
};

export type Waiter = {
  readonly woken: Promise<void>;
  /** Whether it was woken by a commit that handed the lease to it by name. */
  named(): boolean;
  /** The nonce a commit gave it the prepare slot for, by name, if that woke it. */
  slot(): bigint | undefined;
  /** The nonce it prepared and saved while the slot is its own (undefined: none), for wakePreparer. */
  preparing(nonce: bigint | undefined): void;
  /** Leaves the queue; a wake-up this waiter will not use goes to the next one when `handOn`. */
  disarm(handOn: boolean): void;
};

type Entry = {
  readonly holder: string;
  wake(): void;
  woken: boolean;
  named: boolean;
  slot: bigint | undefined;
  preparing: bigint | undefined;
};

function wakeOne(waiters: Map<string, Set<Entry>>, key: string, except?: string): void {
  for (const w of waiters.get(key) ?? []) {
    if (w.woken || w.holder === except) continue;
    w.wake();
    return;
  }
}

/**
 * A published message: the pool's key; the holder the lease was handed to, if any; and the waiter
 * given the prepare slot after it, with its nonce, if any.
 */
function onMessage(waiters: Map<string, Set<Entry>>, message: string): void {
  const [key = '', handedTo, nextInLine, slot] = message.split('\n');
  if (handedTo === undefined) return wakeOne(waiters, key);
  for (const w of waiters.get(key) ?? []) {
    if (w.woken) continue;
    if (w.holder === handedTo) w.named = true;
    else if (w.holder === nextInLine && slot !== undefined) w.slot = BigInt(slot);
    else continue;
    w.wake();
  }
  if (nextInLine === undefined) wakeOne(waiters, key, handedTo);
}

function wakePreparerOf(waiters: Map<string, Set<Entry>>, key: string, nonce: bigint): void {
  for (const w of waiters.get(key) ?? []) {
    if (w.woken || w.preparing !== nonce) continue;
    w.named = true;
    w.wake();
    return;
  }
}

function armWaiter(waiters: Map<string, Set<Entry>>, key: string, holder: string): Waiter {
  let resolve!: () => void;
  const woken = new Promise<void>((r) => (resolve = r));
  const entry: Entry = {
    holder,
    woken: false,
    named: false,
    slot: undefined,
    preparing: undefined,
    wake() {
      entry.woken = true;
      resolve();
    },
  };
  let set = waiters.get(key);
  if (!set) waiters.set(key, (set = new Set()));
  const mine = set;
  mine.add(entry);
  return {
    woken,
    named: () => entry.named,
    slot: () => entry.slot,
    preparing(nonce) {
      entry.preparing = nonce;
    },
    disarm(handOn) {
      mine.delete(entry);
      if (mine.size === 0) waiters.delete(key);
      if (handOn && entry.woken) wakeOne(waiters, key);
    },
  };
}

export function createWakeups(deps: { redis: Redis; channel: string; logger?: Logger | undefined }): Wakeups {
  const waiters = new Map<string, Set<Entry>>();
  let subscriber: Redis | undefined;
  let subscribed: Promise<void> | undefined;
  return {
    ready() {
      if (subscribed) return subscribed;
      const sub = duplicateConnection(deps.redis, { maxRetriesPerRequest: null, lazyConnect: false });
      subscriber = sub;
      sub.on('error', (err: Error) =>
        deps.logger?.warn({ err: { message: err.message } }, 'nonce wake-up connection error'),
      );
      sub.on('message', (_channel: string, message: string) => onMessage(waiters, message));
      subscribed = sub.subscribe(deps.channel).then(
        () => undefined,
        (err: unknown) =>
          deps.logger?.warn({ err: { message: String(err) } }, 'nonce wake-up subscription failed'),
      );
      return subscribed;
    },
    arm: (key, holder) => armWaiter(waiters, key, holder),
    count: (key) => waiters.get(key)?.size ?? 0,
    wakePreparer: (key, nonce) => wakePreparerOf(waiters, key, nonce),
    async close() {
      for (const set of waiters.values()) for (const w of set) w.wake();
      const s = subscriber;
      subscriber = undefined;
      if (s) await s.quit().catch(() => s.disconnect());
    },
  };
}

/** Resolves when woken, after `ms`, or when `signal` aborts, whichever comes first. */
export async function waitForWakeup(
  woken: Promise<void>,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      woken,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
      new Promise<void>((resolve) => {
        if (!signal) return;
        onAbort = resolve;
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
