import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../src/sandbox/sandbox.ts';
import { runCli, waitFor } from '../helpers/cli.ts';
import { Secret } from '../../src/config/config.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import { ServiceError } from '../../src/service/service-error.ts';
import { processAlive, startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';

describe('usdc-batch sandbox as its own process', () => {
  let sb: SandboxProcess;
  beforeAll(async () => {
    sb = await startSandboxProcess({ apiKey: 'sk_process_test', config: { seed: 7 } });
  });
  afterAll(async () => {
    await sb?.stop();
  });

  it('prints the environment a worker needs and answers the client', async () => {
    expect(sb.api_key).toBe('sk_process_test');
    expect(sb.network).toBe('testnet');
    expect(sb.rpc.BASE).toBe(`${sb.url}/rpc/BASE`);
    // What it printed is what it serves: the spender is the relayer's, the RPC URLs its own.
    expect(sb.env['PERMIT_SPENDER']).toBe(sb.spender);
    expect(sb.env['EVM_RPC_URL_BASE']).toBe(sb.rpc.BASE);
    expect(sb.env['SOLANA_RPC_URL']).toBe(sb.rpc.SOLANA);
    expect(sb.anvilPids).toHaveLength(4);
    const client = createServiceClient({ baseUrl: sb.url, apiKey: new Secret('sk_process_test') });
    try {
      const e = await client.estimate({ from: 'POLYGON', to: 'SOLANA', amount: 20_000_000n });
      expect(e.fee.total).toBe(30_000n);
      await sb.admin.configure({ faultScript: [{ op: 'transfer', fault: 'fail_before' }] });
      expect((await sb.admin.config()).faultScript).toHaveLength(1);
      const err = await client
        .transfer(
          {
            from: 'BASE',
            to: 'ETH',
            amount: 1_000_000n,
            recipient: '0x000000000000000000000000000000000000dEaD',
            permit: {
              owner: '0x',
              spender: '0x',
              value: '1',
              nonce: '0',
              deadline: '0',
              signature: '0x',
              v: 27,
              r: '0x',
              s: '0x',
            },
          },
          {},
        )
        .catch((x: unknown) => x);
      expect(err).toBeInstanceOf(ServiceError);
      expect((err as ServiceError).kind).toBe('unavailable');
      expect(await sb.admin.ledger()).toEqual([]);
    } finally {
      client.close();
    }
  });

  it('refuses admin patches it does not understand', async () => {
    await expect(sb.admin.configure({ nope: 1 } as never)).rejects.toThrow(/HTTP 400/);
  });

  it('stops on SIGTERM with exit code 0, and no anvil it started outlives it', async () => {
    expect(sb.anvilPids.every(processAlive)).toBe(true);
    sb.child.kill('SIGTERM');
    await once(sb.child, 'exit');
    expect(sb.child.exitCode).toBe(0);
    expect(sb.anvilPids.filter(processAlive)).toEqual([]);
  });
});

describe('usdc-batch sandbox stopping and refusing', () => {
  it('stops every anvil on Ctrl-C (SIGINT)', async () => {
    const sb = await startSandboxProcess();
    try {
      sb.child.kill('SIGINT');
      await once(sb.child, 'exit');
      expect(sb.child.exitCode).toBe(0);
      expect(sb.anvilPids.filter(processAlive)).toEqual([]);
    } finally {
      await sb.stop();
    }
  });

  it('stops every anvil when an in-process sandbox is closed (a test’s teardown)', async () => {
    const sandbox = await createSandbox();
    const pids = Object.values(sandbox.nodes.evm).map((n) => n.pid as number);
    expect(pids.every(processAlive)).toBe(true);
    await sandbox.close();
    expect(pids.filter(processAlive)).toEqual([]);
  });

  it.skipIf(process.platform !== 'linux')(
    'leaves no anvil behind even when the sandbox is SIGKILLed',
    async () => {
      const sb = await startSandboxProcess();
      try {
        sb.child.kill('SIGKILL');
        await once(sb.child, 'exit');
        // The kernel signals each anvil when its parent dies (setpriv --pdeathsig): no event to
        // await here, so the processes are watched until they are gone (a busy machine reaps late).
        await waitFor('every anvil to exit', async () => !sb.anvilPids.some(processAlive), {
          timeoutMs: 30_000,
          intervalMs: 20,
        }).catch(() => undefined);
        expect(sb.anvilPids.filter(processAlive)).toEqual([]);
      } finally {
        await sb.stop();
      }
    },
  );

  it('refuses --network mainnet with a clear message', async () => {
    const res = await runCli(['sandbox', '--port', '0', '--network', 'mainnet'], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/testnet chain ids only/);
  });
});
