import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { EvmChain, Network } from '../src/domain/chains.ts';
import type { LedgerEntry } from '../src/sandbox/sandbox.ts';
import type { SandboxConfig, SandboxConfigPatch } from '../src/sandbox/sandbox-config.ts';
import type { PermitPayload } from '../src/service/types.ts';

const BIN = fileURLToPath(new URL('../bin/usdc-batch.js', import.meta.url));

export type SandboxInfo = {
  url: string;
  api_key: string;
  spender: string;
  network: Network;
  solana_fee_payer: string;
  solana_deposit_account: string;
  deposit_address: string;
  /** The CCTP v2 road (docs/sandbox.md "CCTP v2"): `api_url` is a worker's `CCTP_API_URL`. */
  cctp: {
    api_url: string;
    attester: string;
    fee_recipient: string;
    contracts: { tokenMessenger: string; messageTransmitter: string };
  };
  rpc: Record<EvmChain | 'SOLANA', string>;
  nodes: {
    evm: Record<EvmChain, { kind: string; url: string | null; pid: number | null }>;
    solana: { kind: string };
  };
};

/** One on-chain balance as `GET /__admin/balances` reports it. */
export type BalanceRow = {
  chain: string;
  address: string;
  usdc: string;
  base_units: string;
  lamports?: string;
};

/** The sandbox's loopback admin routes, over HTTP (works for an in-process or a spawned sandbox). */
export type SandboxAdminClient = {
  info(): Promise<SandboxInfo>;
  config(): Promise<SandboxConfig>;
  configure(patch: SandboxConfigPatch): Promise<SandboxConfig>;
  ledger(): Promise<LedgerEntry[]>;
  /** When each service request arrived, and its operation. */
  requests(): Promise<{ op: string; at: number }[]>;
  reset(): Promise<void>;
  bumpNonce(chain: EvmChain, owner: string, by?: number): Promise<{ expected: bigint; chain: bigint }>;
  /** The outside signer: uses the owner's next `count` nonces now. */
  outsidePermit(
    chain: EvmChain,
    owner: string,
    count?: number,
  ): Promise<{ used: bigint[]; expected: bigint; chain: bigint }>;
  nonce(chain: EvmChain, owner: string): Promise<{ expected: bigint; chain: bigint }>;
  setIntentStatus(intentId: string, status: string): Promise<void>;
  /** On-chain USDC (base units) per chain of each address: every EVM chain, or SOLANA. */
  balances(...addresses: string[]): Promise<BalanceRow[]>;
  /** The base units `address` holds on `chain`, read from the chain. */
  balance(chain: string, address: string): Promise<bigint>;
  setBalance(chain: string, address: string, amount: string): Promise<void>;
  /** Native gas (wei) of an EVM address, read from the chain (funds no one). */
  nativeBalance(chain: EvmChain, address: string): Promise<bigint>;
  /** Sets it for a drill: an owner that cannot pay its CCTP transactions. */
  setNativeBalance(chain: EvmChain, address: string, wei: bigint): Promise<void>;
  /** USDC's own blacklist on an EVM chain: on (blacklist) or off (unblacklist). */
  setBlacklisted(chain: EvmChain, address: string, on: boolean): Promise<void>;
  /** Freezes (on) or thaws (off) a Solana wallet's USDC account; the account's address. */
  setFrozen(address: string, on: boolean): Promise<string>;
};

export function sandboxAdmin(url: string): SandboxAdminClient {
  const call = async <T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(5_000),
    });
    const json = (await res.json()) as T;
    if (!res.ok) throw new Error(`sandbox admin ${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const balances = async (...addresses: string[]) =>
    (
      await call<{ balances: BalanceRow[] }>(
        'GET',
        `/__admin/balances?${addresses.map((a) => `address=${encodeURIComponent(a)}`).join('&')}`,
      )
    ).balances;
  const nonces = (r: { expected: string; chain: string }) => ({
    expected: BigInt(r.expected),
    chain: BigInt(r.chain),
  });
  return {
    info: () => call('GET', '/__admin/info'),
    config: () => call('GET', '/__admin/config'),
    configure: (patch) => call('POST', '/__admin/config', patch),
    ledger: async () => (await call<{ entries: LedgerEntry[] }>('GET', '/__admin/ledger')).entries,
    requests: async () =>
      (await call<{ requests: { op: string; at: number }[] }>('GET', '/__admin/requests')).requests,
    reset: async () => {
      await call('POST', '/__admin/reset', {});
    },
    bumpNonce: async (chain, owner, by = 1) =>
      nonces(await call('POST', '/__admin/bump-nonce', { chain, owner, by })),
    outsidePermit: async (chain, owner, count = 1) => {
      const r = await call<{ used: string[]; expected: string; chain: string }>(
        'POST',
        '/__admin/outside-permit',
        { chain, owner, count },
      );
      return { used: r.used.map(BigInt), ...nonces(r) };
    },
    nonce: async (chain, owner) =>
      nonces(await call('GET', `/__admin/nonce?chain=${chain}&owner=${encodeURIComponent(owner)}`)),
    setIntentStatus: async (intent_id, status) => {
      await call('POST', '/__admin/intent-status', { intent_id, status });
    },
    balances,
    balance: async (chain, address) => {
      const row = (await balances(address)).find((b) => b.chain === chain);
      if (!row) throw new Error(`no ${chain} balance for ${address}`);
      return BigInt(row.base_units);
    },
    setBalance: async (chain, address, amount) => {
      await call('POST', '/__admin/balance', { chain, address, amount });
    },
    nativeBalance: async (chain, address) =>
      BigInt(
        (
          await call<{ wei: string }>(
            'GET',
            `/__admin/native-balance?chain=${chain}&address=${encodeURIComponent(address)}`,
          )
        ).wei,
      ),
    setNativeBalance: async (chain, address, wei) => {
      await call('POST', '/__admin/native-balance', { chain, address, wei: wei.toString() });
    },
    setBlacklisted: async (chain, address, on) => {
      await call('POST', on ? '/__admin/blacklist' : '/__admin/unblacklist', { chain, address });
    },
    setFrozen: async (address, on) =>
      (await call<{ usdc_account: string }>('POST', on ? '/__admin/freeze' : '/__admin/thaw', { address }))
        .usdc_account,
  };
}

export type SandboxProcess = SandboxInfo & {
  readonly port: number;
  readonly admin: SandboxAdminClient;
  readonly child: ChildProcess;
  /** The environment the sandbox printed (`TRANSFER_API_URL`, `PERMIT_SPENDER`, `EVM_RPC_URL_<CHAIN>`, …). */
  readonly env: Readonly<Record<string, string>>;
  /** The PIDs of the anvil processes behind it. */
  readonly anvilPids: readonly number[];
  /**
   * SIGTERM, then SIGKILL after 5 s; resolves when the process has exited. Anvils a killed
   * sandbox could not stop are killed by PID (a SIGKILL cannot be caught to stop them).
   */
  stop(): Promise<void>;
};

/** Whether a process with this PID is alive (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `NAME=value` lines of the sandbox's printed environment, once it printed the last of them. */
function printedEnv(output: string): Record<string, string> | undefined {
  if (!/^SOLANA_ALLOWED_DESTINATIONS=/m.test(output)) return undefined;
  const env: Record<string, string> = {};
  for (const m of output.matchAll(/^([A-Z][A-Z0-9_]*)=(\S+)$/gm)) env[m[1] as string] = m[2] as string;
  return env;
}

/**
 * Spawns `node bin/usdc-batch.js sandbox --port 0` as its own process (as workers meet the real
 * service: over the network, in another process), reads the environment it prints (its URL, the
 * spender, the RPC URLs) and its info. `config` is applied through the admin route once it is up.
 */
export async function startSandboxProcess(
  options: {
    apiKey?: string;
    network?: Network;
    latencyMs?: number;
    config?: SandboxConfigPatch;
    timeoutMs?: number;
  } = {},
): Promise<SandboxProcess> {
  const args = [BIN, 'sandbox', '--port', '0'];
  if (options.apiKey) args.push('--api-key', options.apiKey);
  if (options.network) args.push('--network', options.network);
  if (options.latencyMs !== undefined) args.push('--latency', String(options.latencyMs));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let anvilPids: number[] = [];
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    for (const pid of anvilPids) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  };
  // Generous (a busy machine loads the sandbox and starts four anvils slowly); an exit ends it at once.
  const deadline = Date.now() + (options.timeoutMs ?? 50_000);
  let env: Record<string, string> | undefined;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sandbox exited with ${child.exitCode}: ${output}`);
    env ??= printedEnv(output);
    if (env?.['TRANSFER_API_URL']) {
      const url = env['TRANSFER_API_URL'];
      const admin = sandboxAdmin(url);
      try {
        const info = await admin.info();
        anvilPids = Object.values(info.nodes.evm).flatMap((n) => (n.pid ? [n.pid] : []));
        if (options.config) await admin.configure(options.config);
        return { ...info, port: Number(new URL(url).port), admin, child, env, anvilPids, stop };
      } catch (err) {
        if (Date.now() > deadline) {
          await stop();
          throw new Error(`sandbox did not answer on ${url}: ${String(err)} ${output}`);
        }
      }
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`sandbox printed no environment: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Fixed key vectors (Hardhat's first two dev accounts): never hold value, safe to publish. */
export const TEST_EVM_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const;
export const TEST_EVM_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
export const OTHER_EVM_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const;

/**
 * Signs a real ERC-2612 permit for USDC on `chain` with viem (the way the signing layer will), for
 * tests that talk to the sandbox. Returns the permit object of docs/transfer-service.md §2.4.
 */
export async function signTestPermit(p: {
  key?: `0x${string}`;
  network?: Network;
  chain: EvmChain;
  spender: string;
  value: bigint;
  nonce: bigint;
  deadline?: bigint;
  /** Sign for this owner instead of the key's own address (a permit signed by another key). */
  owner?: string;
}): Promise<PermitPayload> {
  const { privateKeyToAccount } = await import('viem/accounts');
  const { parseSignature } = await import('viem');
  const { PERMIT_TYPES, usdcDomain } = await import('../src/sandbox/permit-check.ts');
  const account = privateKeyToAccount(p.key ?? TEST_EVM_KEY);
  const owner = (p.owner ?? account.address) as `0x${string}`;
  const deadline = p.deadline ?? BigInt(Math.floor(Date.now() / 1000) + 1800);
  const signature = await account.signTypedData({
    domain: usdcDomain(p.network ?? 'testnet', p.chain),
    types: PERMIT_TYPES,
    primaryType: 'Permit',
    message: { owner, spender: p.spender as `0x${string}`, value: p.value, nonce: p.nonce, deadline },
  });
  const { r, s, v } = parseSignature(signature);
  return {
    owner,
    spender: p.spender,
    value: p.value.toString(),
    nonce: p.nonce.toString(),
    deadline: deadline.toString(),
    signature,
    v: Number(v),
    r,
    s,
  };
}
