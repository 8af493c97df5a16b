import { readEnv } from '../../config/env-reader.ts';
import { loadConfig } from '../../config/load-config.ts';
import { ConfigError } from '../../domain/errors.ts';
import { createLogger } from '../../log/logger.ts';
import { readWallets, type WalletsReport } from '../../ops/wallets.ts';
import { createRedis } from '../../store/redis.ts';
import { EXIT } from '../exit-codes.ts';
import { jsonText, plainText, table } from '../format.ts';
import { parseOptions } from '../options.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

/**
 * `usdc-batch wallets` (docs/operating.md "The commands"): the server wallets' public addresses — every EVM owner, in
 * configured order — and, where RPC is configured, each chain's permit nonce and USDC balance per
 * owner, plus the nonce pool and the balance reserved in flight that Redis holds. Needs
 * no service configuration; a source that does not answer is shown as unavailable. Never a secret,
 * and no key read (docs/keys.md): the addresses are EVM_OWNER_ADDRESSES and
 * SOLANA_ADDRESS, the keystores' address fields, or what the running workers published.
 */
export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const flags = parseOptions({ json: 'flag' }, options);
  const config = loadConfig(readEnv(), {});
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  // One try, no reconnects: `wallets` must answer promptly whether or not Redis is up.
  const redis = createRedis(config, {
    role: 'client',
    extra: { retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 2_000 },
  });
  let report: WalletsReport;
  try {
    report = await readWallets({ config, redis });
  } finally {
    redis.disconnect();
  }
  if (report.evm === null && report.solana === null) throw noWalletKnown(report.redis === 'ok');
  logger.debug(
    { evm: report.evm?.owners.map((o) => o.address), solana: report.solana?.address, redis: report.redis },
    'wallets read',
  );
  if (flags.json) {
    out(jsonText(report));
    return EXIT.ok;
  }
  printReport(report);
  return EXIT.ok;
}

/** No address of either family is known: where addresses come from (exit 2). */
function noWalletKnown(redisAnswered: boolean): ConfigError {
  const published = redisAnswered
    ? 'no worker has published its addresses to Redis yet'
    : 'Redis, where the workers publish their addresses, did not answer';
  return new ConfigError([
    {
      variable: 'EVM_OWNER_ADDRESSES',
      message: `no wallet address is known: set EVM_OWNER_ADDRESSES (or EVM_KEYSTORE_FILE to keystores this process can read), and ${published}`,
    },
    { variable: 'SOLANA_ADDRESS', message: "or SOLANA_ADDRESS (the Solana wallet's public address)" },
  ]);
}

const FROM = { configuration: 'the configuration', workers: 'published by the workers' } as const;

function printReport(r: WalletsReport): void {
  out(`network  ${r.network}`);
  const from = [r.addresses_from.evm, r.addresses_from.solana].filter((f) => f !== null);
  if (from.length > 0) out(`addresses  ${[...new Set(from)].map((f) => FROM[f]).join(', ')}`);
  out('');
  if (r.evm) {
    const n = r.evm.owners.length;
    if (n > 1) {
      out(
        `EVM owners  ${n} (in configured order: a transfer goes to the first whose lease is free and whose balance covers it)`,
      );
      out('');
    }
    for (const owner of r.evm.owners) {
      out(`EVM owner  ${owner.address}${n > 1 ? `  (${owner.position} of ${n})` : ''}`);
      out(ownerTable(r, owner.chains));
      for (const c of owner.chains) if (c.error) out(`  ${c.chain}: ${plainText(c.error)}`);
      if (n > 1) out('');
    }
    if (n > 1) {
      out(`all ${n} owners`);
      out(
        table(
          ['chain', 'USDC balance', 'in flight'],
          r.evm.totals.map((t) => [
            t.chain,
            t.rpc ? (t.usdc_balance ?? 'unavailable') : '-',
            t.in_flight ?? 'unavailable',
          ]),
        ),
      );
    }
  } else {
    out('EVM owner  not known (EVM_OWNER_ADDRESSES, or a worker holding the EVM keys)');
  }
  out('');
  if (r.solana) {
    out(`Solana wallet        ${r.solana.address}`);
    out(`Solana USDC account  ${r.solana.usdc_account}`);
    const balance = !r.solana.rpc
      ? '- (set SOLANA_RPC_URL to read it)'
      : (r.solana.usdc_balance ?? `unavailable (${plainText(r.solana.error ?? 'no answer')})`);
    out(`Solana USDC balance  ${balance}`);
  } else {
    out('Solana wallet  not known (SOLANA_ADDRESS, or a worker holding the Solana key)');
  }
  if (r.redis !== 'ok') {
    out('');
    out('Redis did not answer: the nonce pools and the amounts in flight are not shown');
  }
}

/**
 * The owner's native gas, and LOW when it cannot pay for its next transactions (an approval, a
 * burn and a mint at the chain's gas price now: docs/cctp.md "Funding owners with gas").
 */
function gasText(c: NonNullable<WalletsReport['evm']>['chains'][number]): string {
  if (c.native_gas === null) return 'unavailable';
  return c.gas_low === true ? `${c.native_gas} LOW (needs ${c.gas_needed ?? '?'})` : c.native_gas;
}

/**
 * One owner's chains. `in flight` is its balance reserved for transfers the chain has not shown
 * paid yet (`P:reserve`), which `balanceOf` may still include; the columns before it keep the order
 * they had before several owners existed.
 */
function ownerTable(r: WalletsReport, chains: NonNullable<WalletsReport['evm']>['chains']): string {
  const redisDown = r.redis === 'ok' ? '-' : 'unavailable';
  return table(
    ['chain', 'rpc', 'permit nonce', 'USDC balance', 'pool next', 'in flight', 'pool lease', 'native gas'],
    chains.map((c) => [
      c.chain,
      c.rpc ? 'yes' : 'no',
      c.rpc ? (c.permit_nonce ?? 'unavailable') : '-',
      c.rpc ? (c.usdc_balance ?? 'unavailable') : '-',
      c.nonce_pool ? c.nonce_pool.next : redisDown,
      c.in_flight === null
        ? redisDown
        : c.in_flight_transfers
          ? `${c.in_flight} (${c.in_flight_transfers} transfer${c.in_flight_transfers === 1 ? '' : 's'})`
          : c.in_flight,
      c.nonce_pool?.holder
        ? `nonce ${c.nonce_pool.held_nonce ?? '?'} held by ${c.nonce_pool.holder} until ${c.nonce_pool.lease_until ?? '?'}`
        : '-',
      c.rpc ? gasText(c) : '-',
    ]),
  );
}
