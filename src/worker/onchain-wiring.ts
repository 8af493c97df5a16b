import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import { CHAINS } from '../domain/chains.ts';
import type { Logger } from '../log/logger.ts';
import type { OnchainScreening } from '../pipeline/pipeline-deps.ts';
import { createUsdcControls, type UsdcControls } from '../signing/usdc-controls.ts';
import { recordAudit } from '../store/audit.ts';

/**
 * USDC's own controls read before signing (SCREENING_ONCHAIN, docs/promises.md promise 6): the
 * chain reads and the audit of each refusal. `undefined` when the setting is `off`.
 */
export function wireOnchainScreening(deps: {
  readonly config: Config;
  readonly redis: Redis;
  readonly prefix: string;
  readonly controls?: UsdcControls | undefined;
}): OnchainScreening | undefined {
  const { config, redis, prefix } = deps;
  if (!config.screeningOnchain) return undefined;
  return {
    controls: deps.controls ?? createUsdcControls({ config }),
    audit: async (entry) =>
      await recordAudit(
        { redis, prefix, auditLogFile: config.auditLogFile },
        { who: entry.who, action: 'screening_refused', batch: entry.batch, detail: entry.detail },
      ),
  };
}

/**
 * Names at the worker's start the chains whose USDC controls it cannot read (no RPC configured):
 * their recipients (and owners) are not screened on chain. Nothing when SCREENING_ONCHAIN is off.
 */
export function warnUnscreenedChains(config: Config, logger: Logger): void {
  if (!config.screeningOnchain) return;
  const unscreened = CHAINS.filter((c) =>
    c === 'SOLANA' ? config.solanaRpcUrl === undefined : config.evmRpcUrl[c] === undefined,
  );
  if (unscreened.length === 0) return;
  const variables = unscreened.map((c) => (c === 'SOLANA' ? 'SOLANA_RPC_URL' : `EVM_RPC_URL_${c}`));
  logger.warn(
    { chains: unscreened, variables },
    `not screened on chain (no RPC configured): ${unscreened.join(', ')} — USDC's blacklist and frozen accounts are not read there (set ${variables.join(', ')}; SCREENING_ONCHAIN=on)`,
  );
}
