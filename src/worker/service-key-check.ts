import type { Chain } from '../domain/chains.ts';
import { EVM_CHAINS } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import { ApiKeyRefusedError, isKeyRefusal, isServiceError } from '../service/service-error.ts';
import type { ServiceClient } from '../service/types.ts';

/** The most the start waits for the check's answer (its retries included) before going on without it. */
const KEY_CHECK_TIMEOUT_MS = 15_000;

/**
 * docs/configuration.md: a wrong `TRANSFER_API_KEY` is found before any row fails. The worker asks
 * for one estimate of the smallest amount (0.000001 USDC, from a chain it serves) before it takes
 * work: a 401 or 403 stops the start (ApiKeyRefusedError: exit 2, naming the variable); any other
 * refusal means the service accepted the key and judged the request; a service that does not
 * answer now (it may be briefly down) is logged, and the worker goes on.
 */
export async function checkServiceKey(deps: {
  readonly service: Pick<ServiceClient, 'estimate'>;
  readonly sources: readonly Chain[];
  readonly logger: Logger;
}): Promise<void> {
  const from = deps.sources[0] ?? 'BASE';
  const to = EVM_CHAINS.find((c) => c !== from) ?? 'ETH';
  try {
    await deps.service.estimate(
      { from, to, amount: 1n },
      { signal: AbortSignal.timeout(KEY_CHECK_TIMEOUT_MS), quiet: true },
    );
    deps.logger.debug({ from, to }, 'TRANSFER_API_KEY accepted by the service');
  } catch (err) {
    if (isKeyRefusal(err)) throw new ApiKeyRefusedError(err);
    if (isServiceError(err, 'rejected')) {
      deps.logger.debug(
        { from, to, err },
        'TRANSFER_API_KEY accepted (the service refused the tiny estimate itself)',
      );
      return;
    }
    deps.logger.warn(
      { err },
      'could not check TRANSFER_API_KEY at start (the service did not answer); going on: a wrong key would fail rows',
    );
  }
}
