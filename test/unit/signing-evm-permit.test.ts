import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { keccak_256 } from '@noble/hashes/sha3';
import { recoverAddress, recoverTypedDataAddress, type Hex } from 'viem';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { USDC_EVM } from '../../src/domain/chains.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { createEvmSigner, PERMIT_TYPES, permitDeadline } from '../../src/signing/evm/evm-signer.ts';
import { startFakeEvmRpc, type FakeEvmRpc } from '../helpers/fake-evm-rpc.ts';

// Fixed key vectors (the well-known first two Hardhat/Anvil accounts).
const KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const OWNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const KEY_NO_PREFIX = '59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const OWNER_2 = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const SPENDER = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const SPENDER_BASE = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359';

/** The digest USDC's `permit` verifies, computed from first principles (EIP-712), not with viem. */
function permitDigest(
  d: { name: string; version: string; chainId: number; verifyingContract: string },
  m: {
    owner: string;
    spender: string;
    value: bigint;
    nonce: bigint;
    deadline: bigint;
  },
): Hex {
  const enc = new TextEncoder();
  const word = (x: bigint) => Buffer.from(x.toString(16).padStart(64, '0'), 'hex');
  const addr = (a: string) => word(BigInt(a));
  const k = (...parts: Uint8Array[]) => keccak_256(Buffer.concat(parts));
  const domainType = k(
    enc.encode('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'),
  );
  const permitType = k(
    enc.encode('Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)'),
  );
  const domainSeparator = k(
    domainType,
    k(enc.encode(d.name)),
    k(enc.encode(d.version)),
    word(BigInt(d.chainId)),
    addr(d.verifyingContract),
  );
  const structHash = k(
    permitType,
    addr(m.owner),
    addr(m.spender),
    word(m.value),
    word(m.nonce),
    word(m.deadline),
  );
  return `0x${Buffer.from(k(Uint8Array.from([0x19, 0x01]), domainSeparator, structHash)).toString('hex')}`;
}

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger('debug', stream), text: () => lines.join('') };
}

let rpc: FakeEvmRpc;
beforeAll(async () => {
  rpc = await startFakeEvmRpc();
});
afterAll(async () => {
  await rpc.close();
});
afterEach(() => {
  rpc.mode = 'ok';
  rpc.name = 'USDC';
  rpc.version = '2';
});

describe('EVM permit signing', () => {
  it('signs a permit that recovers to the owner, with the built-in domain when no RPC is configured', async () => {
    const config = loadConfig(
      { EVM_PRIVATE_KEY: KEY, PERMIT_SPENDER: SPENDER, NETWORK: 'testnet' },
      { keys: signingKeys },
    );
    const signer = createEvmSigner({ config });
    expect(signer.address).toBe(OWNER);
    const req = { chain: 'BASE' as const, amount: 12_345_678n, nonce: 7n, deadline: 1_900_000_000n };
    const permit = await signer.signPermit(req);

    expect(permit).toMatchObject({
      owner: OWNER,
      spender: SPENDER,
      value: '12345678',
      nonce: '7',
      deadline: '1900000000',
    });
    expect(permit.signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect([27, 28]).toContain(permit.v);
    expect(typeof permit.v).toBe('number');
    expect(permit.signature).toBe(`${permit.r}${permit.s.slice(2)}${permit.v.toString(16)}`);

    const dep = USDC_EVM.testnet.BASE;
    const domain = {
      name: dep.eip712Name,
      version: dep.eip712Version,
      chainId: dep.chainId,
      verifyingContract: dep.usdc,
    };
    const message = {
      owner: OWNER,
      spender: SPENDER,
      value: req.amount,
      nonce: req.nonce,
      deadline: req.deadline,
    } as const;
    await expect(
      recoverTypedDataAddress({
        domain,
        types: PERMIT_TYPES,
        primaryType: 'Permit',
        message,
        signature: permit.signature as Hex,
      }),
    ).resolves.toBe(OWNER);
    // The same digest computed independently: the contract would accept this exact signature.
    await expect(
      recoverAddress({ hash: permitDigest(domain, message), signature: permit.signature as Hex }),
    ).resolves.toBe(OWNER);
  });

  it('uses the per-chain spender and the mainnet deployment when configured so', async () => {
    const config = loadConfig(
      {
        EVM_PRIVATE_KEY: KEY_NO_PREFIX,
        PERMIT_SPENDER: SPENDER,
        PERMIT_SPENDER_BASE: SPENDER_BASE,
        NETWORK: 'mainnet',
      },
      { keys: signingKeys },
    );
    const signer = createEvmSigner({ config });
    expect(signer.address).toBe(OWNER_2);
    const permit = await signer.signPermit({ chain: 'BASE', amount: 1n, nonce: 0n, deadline: 1n });
    expect(permit.spender).toBe(SPENDER_BASE);
    const dep = USDC_EVM.mainnet.BASE;
    const domain = {
      name: dep.eip712Name,
      version: dep.eip712Version,
      chainId: dep.chainId,
      verifyingContract: dep.usdc,
    };
    const hash = permitDigest(domain, {
      owner: OWNER_2,
      spender: SPENDER_BASE,
      value: 1n,
      nonce: 0n,
      deadline: 1n,
    });
    await expect(recoverAddress({ hash, signature: permit.signature as Hex })).resolves.toBe(OWNER_2);
    expect((await signer.signPermit({ chain: 'ETH', amount: 1n, nonce: 0n, deadline: 1n })).spender).toBe(
      SPENDER,
    );
  });

  it('uses the EIP-712 name and version read over RPC, and reads them once per chain', async () => {
    rpc.name = 'Bridged USDC (test)';
    rpc.version = '7';
    const config = loadConfig(
      { EVM_PRIVATE_KEY: KEY, PERMIT_SPENDER: SPENDER, EVM_RPC_URL_ARB: rpc.url },
      { keys: signingKeys },
    );
    const signer = createEvmSigner({ config });
    const before = { name: rpc.calls['name'] ?? 0, version: rpc.calls['version'] ?? 0 };
    const permit = await signer.signPermit({ chain: 'ARB', amount: 5n, nonce: 1n, deadline: 99n });
    await signer.signPermit({ chain: 'ARB', amount: 6n, nonce: 2n, deadline: 99n });

    const dep = USDC_EVM.testnet.ARB;
    const message = { owner: OWNER, spender: SPENDER, value: 5n, nonce: 1n, deadline: 99n };
    const rpcDomain = {
      name: 'Bridged USDC (test)',
      version: '7',
      chainId: dep.chainId,
      verifyingContract: dep.usdc,
    };
    const tableDomain = { ...rpcDomain, name: dep.eip712Name, version: dep.eip712Version };
    await expect(
      recoverAddress({ hash: permitDigest(rpcDomain, message), signature: permit.signature as Hex }),
    ).resolves.toBe(OWNER);
    await expect(
      recoverAddress({ hash: permitDigest(tableDomain, message), signature: permit.signature as Hex }),
    ).resolves.not.toBe(OWNER);
    expect(rpc.calls['name']).toBe(before.name + 1);
    expect(rpc.calls['version']).toBe(before.version + 1);
    expect(rpc.targets.at(-1)).toBe(dep.usdc);
  });

  it('falls back to the built-in domain with a warning when the RPC fails, and never logs the key', async () => {
    rpc.mode = 'http500';
    const log = capture();
    const config = loadConfig(
      { EVM_PRIVATE_KEY: KEY, PERMIT_SPENDER: SPENDER, EVM_RPC_URL_ETH: rpc.url },
      { keys: signingKeys },
    );
    const signer = createEvmSigner({ config, logger: log.logger });
    const permit = await signer.signPermit({ chain: 'ETH', amount: 10n, nonce: 3n, deadline: 50n });
    const dep = USDC_EVM.testnet.ETH;
    const domain = {
      name: dep.eip712Name,
      version: dep.eip712Version,
      chainId: dep.chainId,
      verifyingContract: dep.usdc,
    };
    const hash = permitDigest(domain, {
      owner: OWNER,
      spender: SPENDER,
      value: 10n,
      nonce: 3n,
      deadline: 50n,
    });
    await expect(recoverAddress({ hash, signature: permit.signature as Hex })).resolves.toBe(OWNER);
    expect(log.text()).toMatch(/built-in EIP-712 domain/);
    expect(log.text()).not.toContain(KEY.slice(2));
    expect(log.text()).not.toContain(permit.signature.slice(2));
  });

  it('refuses to sign without a spender, or for a zero amount', async () => {
    const signer = createEvmSigner({ config: loadConfig({ EVM_PRIVATE_KEY: KEY }, { keys: signingKeys }) });
    await expect(
      signer.signPermit({ chain: 'ETH', amount: 1n, nonce: 0n, deadline: 1n }),
    ).rejects.toMatchObject({
      code: 'USDC_PERMIT_SPENDER_MISSING',
    });
    const withSpender = createEvmSigner({
      config: loadConfig({ EVM_PRIVATE_KEY: KEY, PERMIT_SPENDER: SPENDER }, { keys: signingKeys }),
    });
    await expect(
      withSpender.signPermit({ chain: 'ETH', amount: 0n, nonce: 0n, deadline: 1n }),
    ).rejects.toMatchObject({
      code: 'USDC_PERMIT_INVALID',
    });
  });

  it('refuses to start without a key', () => {
    expect(() => createEvmSigner({ config: loadConfig({}) })).toThrow(/EVM_PRIVATE_KEY/);
  });

  it('computes a deadline PERMIT_DEADLINE_SECONDS after now (default 30 minutes)', () => {
    expect(permitDeadline(loadConfig({}), 1_700_000_000_500)).toBe(1_700_001_800n);
    expect(permitDeadline(loadConfig({ PERMIT_DEADLINE_SECONDS: '120' }), 1_700_000_000_000)).toBe(
      1_700_000_120n,
    );
  });
});

describe('EVM chain reader', () => {
  it('reads nonces(owner) and balanceOf(owner) of USDC over eth_call', async () => {
    rpc.nonces.set(OWNER, 41n);
    rpc.balances.set(OWNER, 1_000_000n);
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_POLYGON: rpc.url }) });
    expect(await reader.permitNonce('POLYGON', OWNER)).toBe(41n);
    expect(await reader.usdcBalance('POLYGON', OWNER.toLowerCase())).toBe(1_000_000n);
    expect(rpc.targets.at(-1)).toBe(USDC_EVM.testnet.POLYGON.usdc);
    expect(await reader.permitNonce('ETH', OWNER)).toBeUndefined();
  });

  it('reads nonces(owner) at the very block whose header it read (by hash), never at latest', async () => {
    rpc.nonces.set(OWNER, 7n);
    rpc.head = { number: '0x2a', timestamp: '0x6553f100', hash: `0x${'cd'.repeat(32)}` };
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: rpc.url }) });
    expect(await reader.permitNonceAtHead('BASE', OWNER)).toEqual({
      nonce: 7n,
      block: { number: 42n, timestamp: 1_700_000_000n, hash: `0x${'cd'.repeat(32)}` },
    });
    expect(rpc.headTags.at(-1)).toBe('latest');
    // EIP-1898: a node on another fork, or another node behind a load balancer, cannot answer for it.
    expect(rpc.blockTags.at(-1)).toEqual({ blockHash: `0x${'cd'.repeat(32)}`, requireCanonical: true });
    expect(await reader.permitNonceAtHead('ETH', OWNER)).toBeUndefined();
  });

  it('reads the finalized block when asked: what a "never executed" verdict rests on', async () => {
    rpc.head = { number: '0x20', timestamp: '0x6553f000', hash: `0x${'ab'.repeat(32)}` };
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: rpc.url }) });
    const reading = await reader.permitNonceAtHead('BASE', OWNER, 'finalized');
    expect(rpc.headTags.at(-1)).toBe('finalized');
    expect(reading?.block.number).toBe(32n);
    expect(rpc.blockTags.at(-1)).toEqual({ blockHash: `0x${'ab'.repeat(32)}`, requireCanonical: true });
  });

  it('refuses an answer from a node that cannot say which block it read', async () => {
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: rpc.url }) });
    for (const head of [
      null,
      { number: '0x2a', hash: `0x${'cd'.repeat(32)}` },
      { number: '0x2a', timestamp: '0x1' },
    ]) {
      rpc.head = head;
      const before = rpc.calls['nonces'] ?? 0;
      await expect(reader.permitNonceAtHead('BASE', OWNER)).rejects.toMatchObject({
        code: 'USDC_RPC_BLOCK_UNKNOWN',
      });
      expect(rpc.calls['nonces'] ?? 0).toBe(before);
    }
  });

  it('keeps the URL credentials and query out of its errors', async () => {
    rpc.mode = 'rpc_error';
    const secretUrl = rpc.url.replace('http://', 'http://alice:hunter2@') + '/v2/KEY123?apikey=SECRET9';
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: secretUrl }) });
    const before = rpc.calls['nonces'] ?? 0;
    const err = await reader.permitNonce('BASE', OWNER).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'USDC_RPC_FAILED' });
    expect(String(err)).toMatch(/eth_call refused: execution reverted/);
    expect(rpc.calls['nonces']).toBe(before + 1);
    expect(rpc.lastAuthorization).toBe(`Basic ${Buffer.from('alice:hunter2').toString('base64')}`);
    const text = `${String(err)} ${JSON.stringify(err)} ${(err as Error).stack}`;
    for (const secret of ['alice', 'hunter2', 'KEY123', 'SECRET9']) expect(text).not.toContain(secret);
    expect(text).toContain('127.0.0.1');
  });

  it('fails fast when the RPC does not answer', async () => {
    rpc.mode = 'hang';
    const reader = createChainReader({ config: loadConfig({ EVM_RPC_URL_BASE: rpc.url }), timeoutMs: 200 });
    // Its own timeout ended the read (a read that waited on would time the test out instead).
    await expect(reader.permitNonce('BASE', OWNER)).rejects.toMatchObject({
      code: 'USDC_RPC_FAILED',
      message: expect.stringMatching(/no answer within 200 ms/),
    });
  });
});
