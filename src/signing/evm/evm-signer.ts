import { parseSignature, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Config, Secret } from '../../config/config.ts';
import { spenderFor } from '../../config/load-config.ts';
import { USDC_EVM, type EvmChain } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import type { PermitPayload } from '../../domain/permit.ts';
import { SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import type { EvmSigner } from '../types.ts';
import { createChainReader, type EvmChainReader } from './chain-reader.ts';

/** The ERC-2612 typed data, exactly as USDC's `permit` verifies it. */
export const PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

export type PermitDomain = {
  readonly name: string;
  readonly version: string;
  readonly chainId: number;
  readonly verifyingContract: `0x${string}`;
};

export type EvmSignerDeps = {
  readonly config: Config;
  /** The owner's key; defaults to the first of `config.evmPrivateKeys`. */
  readonly key?: Secret;
  /** The EIP-712 domains, shared by the signers of several owners; made here when not given. */
  readonly domains?: PermitDomains;
  /** Defaults to a reader over `config.evmRpcUrl`. */
  readonly chainReader?: EvmChainReader;
  readonly logger?: Logger;
  /** How long a domain that had to fall back to the built-in table is kept before RPC is tried again. */
  readonly fallbackRetryMs?: number;
  readonly now?: () => number;
};

/** The deadline (unix seconds) of a permit signed at `nowMs`: `PERMIT_DEADLINE_SECONDS` later. */
export function permitDeadline(
  config: Pick<Config, 'permitDeadlineSeconds'>,
  nowMs: number = Date.now(),
): bigint {
  return BigInt(Math.floor(nowMs / 1000) + config.permitDeadlineSeconds);
}

const UINT256_MAX = (1n << 256n) - 1n;

/** The EIP-712 domain of USDC per chain: read over RPC and cached, or the built-in table. */
export type PermitDomains = { domainFor(chain: EvmChain): Promise<PermitDomain> };

export function createPermitDomains(
  deps: Pick<EvmSignerDeps, 'config' | 'chainReader' | 'logger' | 'fallbackRetryMs' | 'now'>,
): PermitDomains {
  const { config, logger } = deps;
  const reader = deps.chainReader ?? createChainReader({ config, ...(logger ? { logger } : {}) });
  const fallbackRetryMs = deps.fallbackRetryMs ?? 60_000;
  const now = deps.now ?? Date.now;
  const cache = new Map<EvmChain, { domain: Promise<PermitDomain>; until: number }>();
  async function loadDomain(chain: EvmChain): Promise<{ domain: PermitDomain; fromRpc: boolean }> {
    const deployment = USDC_EVM[config.network][chain];
    const base = { chainId: deployment.chainId, verifyingContract: deployment.usdc };
    const fallback = { ...base, name: deployment.eip712Name, version: deployment.eip712Version };
    if (!reader.hasRpc(chain)) return { domain: fallback, fromRpc: false };
    try {
      const [name, version] = await Promise.all([reader.usdcName(chain), reader.usdcVersion(chain)]);
      if (name === undefined || version === undefined) return { domain: fallback, fromRpc: false };
      return { domain: { ...base, name, version }, fromRpc: true };
    } catch (err) {
      logger?.warn(
        {
          chain,
          err: err instanceof Error ? { message: err.message, code: (err as { code?: unknown }).code } : err,
        },
        'cannot read USDC name()/version() over RPC; signing with the built-in EIP-712 domain',
      );
      return { domain: fallback, fromRpc: false };
    }
  }

  function domainFor(chain: EvmChain): Promise<PermitDomain> {
    const hit = cache.get(chain);
    if (hit && hit.until > now()) return hit.domain;
    const loaded = loadDomain(chain);
    const entry = { domain: loaded.then((l) => l.domain), until: Number.POSITIVE_INFINITY };
    cache.set(chain, entry);
    // A domain read over RPC never changes for a deployed USDC; a fallback is retried later, since
    // a wrong domain only makes the service refuse the permit (no money moves), but would do so forever.
    void loaded.then((l) => {
      if (!l.fromRpc && reader.hasRpc(chain)) entry.until = now() + fallbackRetryMs;
    });
    return entry.domain;
  }

  return { domainFor };
}

/**
 * Signs ERC-2612 permits for USDC with one treasury owner's key. The key is taken out of its
 * `Secret` only to build the viem account and is never logged or put in a message.
 */
export function createEvmSigner(deps: EvmSignerDeps): EvmSigner & {
  /** The EIP-712 domain used on `chain` (read over RPC and cached, or the built-in table). */
  domainFor(chain: EvmChain): Promise<PermitDomain>;
} {
  const { config } = deps;
  const key = deps.key ?? config.evmPrivateKeys[0];
  if (key === undefined) {
    throw new SigningError(
      SIGNING_ERROR_CODES.evmKeyMissing,
      'No EVM key: set EVM_PRIVATE_KEY or EVM_PRIVATE_KEY_FILE to sign permits',
    );
  }
  const account = privateKeyToAccount(key.reveal() as Hex);
  const { domainFor } = deps.domains ?? createPermitDomains(deps);

  return {
    address: account.address,
    domainFor,
    async signPermit({ chain, amount, nonce, deadline }): Promise<PermitPayload> {
      const spender = spenderFor(config, chain);
      if (spender === undefined) {
        throw new SigningError(
          SIGNING_ERROR_CODES.spenderMissing,
          `No permit spender for ${chain}: set PERMIT_SPENDER or PERMIT_SPENDER_${chain}`,
        );
      }
      for (const [what, v] of [
        ['amount', amount],
        ['nonce', nonce],
        ['deadline', deadline],
      ] as const) {
        if (v < 0n || v > UINT256_MAX || (what === 'amount' && v === 0n)) {
          throw new SigningError(SIGNING_ERROR_CODES.permitInvalid, `Permit ${what} out of range: ${v}`);
        }
      }
      const domain = await domainFor(chain);
      const message = {
        owner: account.address,
        spender: spender as `0x${string}`,
        value: amount,
        nonce,
        deadline,
      };
      const signature = await account.signTypedData({
        domain,
        types: PERMIT_TYPES,
        primaryType: 'Permit',
        message,
      });
      const parsed = parseSignature(signature);
      // viem gives `v` as a bigint (27n/28n); the service wants a number.
      const v = parsed.v !== undefined ? Number(parsed.v) : 27 + parsed.yParity;
      return {
        owner: account.address,
        spender,
        value: amount.toString(),
        nonce: nonce.toString(),
        deadline: deadline.toString(),
        signature,
        v,
        r: parsed.r,
        s: parsed.s,
      };
    },
  };
}

/** One signer per treasury owner, in the configured order, sharing one domain cache. */
export function createEvmSigners(
  deps: Omit<EvmSignerDeps, 'key' | 'domains'>,
): readonly ReturnType<typeof createEvmSigner>[] {
  const domains = createPermitDomains(deps);
  return deps.config.evmPrivateKeys.map((key) => createEvmSigner({ ...deps, key, domains }));
}
