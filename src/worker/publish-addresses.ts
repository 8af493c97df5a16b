import type { Redis } from 'ioredis';
import type { Logger } from '../log/logger.ts';
import { PUBLISH_EVERY_MS, publishAddresses } from '../store/published-addresses.ts';

/**
 * A worker tells the processes that hold no key which addresses its keys have (docs/keys.md
 * ; docs/data-model.md `P:treasury:addresses`): once before it takes work, then every
 * PUBLISH_EVERY_MS while it runs. The addresses stay published when it stops: "what the workers
 * last published" is what `serve`, `wallets` and `rebalance` use when the configuration names none.
 */
export async function startAddressPublisher(deps: {
  readonly redis: Redis;
  readonly prefix: string;
  readonly addresses: { readonly evm: readonly string[]; readonly solana: string | undefined };
  readonly logger?: Logger;
}): Promise<{ stop(): void }> {
  const publish = () => publishAddresses(deps.redis, deps.prefix, deps.addresses, Date.now());
  await publish();
  const timer = setInterval(
    () =>
      void publish().catch((err: unknown) =>
        deps.logger?.warn(
          { err: { message: (err as Error).message } },
          'could not publish the treasury addresses',
        ),
      ),
    PUBLISH_EVERY_MS,
  );
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
    },
  };
}
