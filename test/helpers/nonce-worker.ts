/**
 * A stand-in worker process for the nonce-manager integration test: signs and sends `COUNT`
 * permits for one (chain, owner) to the sandbox through the shared Redis nonce manager, with
 * `CONCURRENCY` transfers in flight, and prints one JSON line per accepted transfer, then a summary.
 *
 * It follows the worker's rules for one transfer: acquire → sign → send; accepted → commit; a
 * first send refused → the chain's nonce, read at its head block, moved past ours (the owner signed
 * elsewhere: move the lease to it and sign again) or release (the permit can never execute; try
 * again). Nothing else is expected here, so any other failure ends the process with exit 1.
 *
 * Env: REDIS_URL, PREFIX, WORKER_ID, COUNT, CONCURRENCY, CHAIN, REFUSE_EVERY (0: never; k: every
 * k-th transfer's first permit is signed already expired, so the sandbox refuses it), and the
 * product's own variables (TRANSFER_API_URL, TRANSFER_API_KEY, EVM_PRIVATE_KEY, PERMIT_SPENDER,
 * EVM_RPC_URL_<CHAIN>, NETWORK).
 */
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/load-config.ts';
import { isEvmChain } from '../../src/domain/chains.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { createEvmSigner, permitDeadline } from '../../src/signing/evm/evm-signer.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { createNonceManager } from '../../src/signing/evm/nonce-manager.ts';
import { createServiceClient } from '../../src/service/service-client.ts';
import { isServiceError } from '../../src/service/service-error.ts';

const env = process.env;
const chain = env['CHAIN'] ?? 'BASE';
if (!isEvmChain(chain)) throw new Error(`CHAIN ${chain} is not an EVM chain`);
const workerId = env['WORKER_ID'] ?? '0';
const count = Number(env['COUNT'] ?? '50');
const concurrency = Number(env['CONCURRENCY'] ?? '4');
const refuseEvery = Number(env['REFUSE_EVERY'] ?? '0');
const config = loadConfig(env, { service: true, evmKey: true, keys: signingKeys });

const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 3 });
const chainReader = createChainReader({ config });
const signer = createEvmSigner({ config, chainReader });
const nonces = createNonceManager({ redis, prefix: env['PREFIX'] ?? 'usdc', chainReader });
const client = createServiceClient({
  baseUrl: config.transferApiUrl as string,
  apiKey: config.transferApiKey as NonNullable<typeof config.transferApiKey>,
});
const RECIPIENT = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const stats = { accepted: 0, refused: 0, movedOnChain: 0 };

async function pay(i: number): Promise<void> {
  const holder = `w${workerId}/t${i}`;
  const amount = BigInt(1_000_000 + i);
  let sabotage = refuseEvery > 0 && i % refuseEvery === 0;
  for (let attempt = 0; attempt < 50; attempt++) {
    const lease = await nonces.acquire(chain as 'BASE', signer.address, holder);
    let nonce = lease.nonce;
    for (;;) {
      // A permit past its deadline is refused on its first send: it can never execute.
      const deadline = sabotage ? 1n : permitDeadline(config);
      sabotage = false;
      const permit = await signer.signPermit({ chain: chain as 'BASE', amount, nonce, deadline });
      try {
        const r = await client.transfer(
          { from: chain as 'BASE', to: 'ARB', amount, recipient: RECIPIENT, permit },
          { idempotencyKey: `${holder}/${attempt}/${nonce}` },
        );
        await lease.commit();
        stats.accepted++;
        process.stdout.write(`${JSON.stringify({ holder, nonce: nonce.toString(), intent: r.intentId })}\n`);
        return;
      } catch (err) {
        if (!isServiceError(err, 'rejected')) throw err;
        stats.refused++;
        // (The worker watches the chain over a settle window; bumps here show on chain at once.)
        const reading = await chainReader.permitNonceAtHead(chain as 'BASE', signer.address);
        if (reading === undefined || reading.nonce <= nonce) {
          await lease.release();
          break; // back to acquire: the nonce went back to the pool
        }
        await lease.moveTo(reading.nonce);
        stats.movedOnChain++;
        nonce = reading.nonce;
      }
    }
    await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
  }
  throw new Error(`${holder} was refused 50 times`);
}

let next = 0;
async function lane(): Promise<void> {
  while (next < count) await pay(next++);
}

try {
  await Promise.all(Array.from({ length: concurrency }, lane));
  process.stdout.write(`${JSON.stringify({ done: true, workerId, ...stats })}\n`);
  process.exitCode = 0;
} catch (err) {
  process.stderr.write(`worker ${workerId} failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await nonces.close();
  client.close();
  redis.disconnect();
}
