import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/config/config.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import { ServiceError } from '../../src/service/service-error.ts';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox.ts';

describe('usdc-batch sandbox as its own process', () => {
  let sb: SandboxProcess;
  beforeAll(async () => {
    sb = await startSandboxProcess({ apiKey: 'sk_process_test', network: 'mainnet', config: { seed: 7 } });
  });
  afterAll(async () => {
    await sb?.stop();
  });

  it('prints the environment a worker needs and answers the client', async () => {
    expect(sb.api_key).toBe('sk_process_test');
    expect(sb.network).toBe('mainnet');
    expect(sb.rpc.BASE).toBe(`${sb.url}/rpc/BASE`);
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

  it('stops on SIGTERM with exit code 0', async () => {
    await sb.stop();
    expect(sb.child.exitCode).toBe(0);
  });
});
