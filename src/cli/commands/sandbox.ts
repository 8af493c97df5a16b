import { once } from 'node:events';
import { EVM_CHAINS } from '../../domain/chains.ts';
import { ValidationError } from '../../domain/errors.ts';
import { createSandbox, type SandboxOptions } from '../../sandbox/sandbox.ts';
import { EXIT } from '../exit-codes.ts';

function whole(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const text = String(value);
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ValidationError(
      'USDC_USAGE_INVALID_OPTION',
      `--${name} must be a whole number from ${min} to ${max}`,
    );
  }
  return Number(text);
}

/**
 * `usdc-batch sandbox`: runs the strict simulator of the transfer service until SIGINT/SIGTERM.
 * Prints, on stdout, the environment a worker needs to use it.
 */
export async function run(_args: string[], options: Record<string, unknown>): Promise<number> {
  const port = whole('port', options['port'], 0, 65_535);
  const latencyMs = whole('latency', options['latency'], 0, 600_000);
  const opts: SandboxOptions = {
    ...(port !== undefined ? { port } : {}),
    ...(latencyMs !== undefined ? { latencyMs } : {}),
    ...(typeof options['host'] === 'string' ? { host: options['host'] } : {}),
    ...(typeof options['apiKey'] === 'string' ? { apiKey: options['apiKey'] } : {}),
    ...(typeof options['spender'] === 'string' ? { spender: options['spender'] } : {}),
    ...(options['network'] === 'mainnet' || options['network'] === 'testnet'
      ? { network: options['network'] }
      : {}),
  };
  let sandbox: Awaited<ReturnType<typeof createSandbox>>;
  try {
    sandbox = await createSandbox(opts);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      process.stderr.write(`error: port ${port ?? ''} is already in use\n`);
      return EXIT.usage;
    }
    if (err instanceof TypeError) throw new ValidationError('USDC_USAGE_INVALID_OPTION', `--${err.message}`);
    throw err;
  }
  const lines = [
    `usdc-batch sandbox (${sandbox.network}) listening on ${sandbox.url}`,
    '',
    `TRANSFER_API_URL=${sandbox.url}`,
    `TRANSFER_API_KEY=${sandbox.apiKey}`,
    `NETWORK=${sandbox.network}`,
    `PERMIT_SPENDER=${sandbox.spender}`,
    ...EVM_CHAINS.map((c) => `EVM_RPC_URL_${c}=${sandbox.rpcUrl(c)}`),
    `SOLANA_ALLOWED_DESTINATIONS=${sandbox.solanaDepositAccount}`,
    '',
    `solana fee payer: ${sandbox.solanaFeePayer}`,
    `admin (loopback only): GET/POST ${sandbox.url}/__admin/config, GET /__admin/ledger, POST /__admin/reset, POST /__admin/bump-nonce, POST /__admin/outside-permit`,
    'press Ctrl-C to stop',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const ac = new AbortController();
  await Promise.race([
    once(process, 'SIGINT', { signal: ac.signal }),
    once(process, 'SIGTERM', { signal: ac.signal }),
  ]).catch(() => {});
  ac.abort();
  await sandbox.close();
  process.stdout.write('sandbox stopped\n');
  return EXIT.ok;
}
