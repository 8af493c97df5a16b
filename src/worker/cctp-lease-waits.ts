import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import type { CctpDeps } from '../pipeline/cctp/cctp-deps.ts';
import { createWakeups, waitForWakeup } from '../signing/evm/nonce-wakeups.ts';
import { cctpLeaseChannel, cctpLeaseKey, releaseCctpLease, takeCctpLease } from '../store/cctp-gate.ts';

/*
 * The (chain, owner) CCTP lease as the CCTP road uses it (docs/cctp.md "The flow"): taken and
 * released in Redis (store/cctp-gate.ts), and waited for inside the job: a release publishes the
 * lease's key and one local waiter on it (the longest waiting) tries again at once — the wake-ups of
 * the permit nonce lease (signing/evm/nonce-wakeups.ts), subscribed once per process on first wait.
 */
export function createCctpLease(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  /** How long the lease outlives a crashed holder (four WORKER_LOCK_MS): renewed at every step. */
  readonly ttlMs: number;
  readonly logger?: Logger | undefined;
}): CctpDeps['lease'] & { close(): Promise<void> } {
  const { redis, prefix, ttlMs } = deps;
  const wakeups = createWakeups({ redis, channel: cctpLeaseChannel(prefix), logger: deps.logger });
  return {
    take: (chain, owner, holder) => takeCctpLease(redis, prefix, { chain, owner, holder, ttlMs }),
    release: (chain, owner, holder) => releaseCctpLease(redis, prefix, { chain, owner, holder }),
    async waitReleased(at, ms, signal) {
      await wakeups.ready();
      const waiters = at.owners.map((owner) => {
        const w = wakeups.arm(cctpLeaseKey(prefix, at.chain, owner), at.holder);
        const flag = { woken: false };
        void w.woken.then(() => (flag.woken = true));
        return { w, flag };
      });
      try {
        await waitForWakeup(Promise.race(waiters.map((x) => x.w.woken)), ms, signal);
      } finally {
        // The caller looks at every owner now: the first wake-up is used; any other that came
        // meanwhile goes on to the next transfer waiting on its key.
        let used = false;
        for (const { w, flag } of waiters) {
          w.disarm(flag.woken && used);
          used ||= flag.woken;
        }
      }
    },
    close: () => wakeups.close(),
  };
}
