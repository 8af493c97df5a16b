import { describe, expect, it } from 'vitest';
import { decideOwners, decideRecipient } from '../../src/pipeline/onchain-controls.ts';
import { readTokenAccountState } from '../../src/signing/solana/token-account-state.ts';
import { createUsdcControls } from '../../src/signing/usdc-controls.ts';

/*
 * USDC's own controls before signing (docs/promises.md, promise 6): the decisions over what the
 * chains showed, the Solana account's state as a node answers it, and how long a reading serves.
 */

const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';

describe('decideRecipient', () => {
  it('rejects a blacklisted EVM recipient and a frozen Solana account; pays the rest', () => {
    expect(decideRecipient({ kind: 'evm', chain: 'ARB', recipient: A, blacklisted: true })).toMatchObject({
      state: 'rejected',
      code: 'recipient_blacklisted',
      check: 'blacklist',
      chain: 'ARB',
    });
    expect(decideRecipient({ kind: 'evm', chain: 'ARB', recipient: A, blacklisted: false })).toBeUndefined();
    const solana = { kind: 'solana', recipient: 'W', account: 'T' } as const;
    expect(decideRecipient({ ...solana, state: 'frozen' })).toMatchObject({
      state: 'rejected',
      code: 'recipient_frozen',
      check: 'frozen',
      chain: 'SOLANA',
    });
    // An account that does not exist yet is fine: the payment creates it.
    expect(decideRecipient({ ...solana, state: 'absent' })).toBeUndefined();
    expect(decideRecipient({ ...solana, state: 'open' })).toBeUndefined();
    expect(decideRecipient({ kind: 'unscreened' })).toBeUndefined();
  });
});

describe('decideOwners', () => {
  const owners = (a: boolean, b: boolean) => [
    { address: A, blacklisted: a },
    { address: B, blacklisted: b },
  ];

  it('leaves a blacklisted owner out while another may pay, in the configured order', () => {
    expect(decideOwners({ chain: 'ETH', owners: owners(true, false), fixed: null })).toEqual({ owners: [B] });
    expect(decideOwners({ chain: 'ETH', owners: owners(false, false), fixed: null })).toEqual({
      owners: [A, B],
    });
  });

  it('fails owner_blacklisted when no owner is left', () => {
    const alone = decideOwners({ chain: 'ETH', owners: [{ address: A, blacklisted: true }], fixed: null });
    expect(alone).toMatchObject({
      refusal: { state: 'failed', code: 'owner_blacklisted', check: 'owner_blacklist' },
    });
    expect(decideOwners({ chain: 'ETH', owners: owners(true, true), fixed: null })).toMatchObject({
      refusal: { code: 'owner_blacklisted' },
    });
  });

  it('never moves a transfer whose permit an owner signed to another owner', () => {
    // Only the owner that signed may sign again: blacklisted, the transfer fails.
    expect(decideOwners({ chain: 'ETH', owners: owners(true, false), fixed: A })).toMatchObject({
      refusal: { code: 'owner_blacklisted' },
    });
    expect(decideOwners({ chain: 'ETH', owners: owners(true, false), fixed: B })).toEqual({ owners: [B] });
    // An owner this worker has no key for: nobody here may pay (the flow says so and waits).
    expect(decideOwners({ chain: 'ETH', owners: owners(false, false), fixed: '0x3' })).toEqual({
      owners: [],
    });
  });
});

/** A Solana RPC answering `getAccountInfo` with `value`, counting the calls. */
function solanaRpc(value: () => unknown) {
  const calls: unknown[] = [];
  const fetch = (async (_url: unknown, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as { method: string; params: unknown[] };
    calls.push(body.params);
    return new Response(
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: { context: { slot: 1 }, value: value() } }),
    );
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

/** A token account's 165 bytes with `state` at its offset (108). */
function tokenBytes(state: number): string {
  const bytes = new Uint8Array(165);
  bytes[108] = state;
  return Buffer.from(bytes).toString('base64');
}

describe('readTokenAccountState', () => {
  const read = (value: unknown) =>
    readTokenAccountState('http://rpc.invalid/', 'T', {
      timeoutMs: 1_000,
      fetch: solanaRpc(() => value).fetch,
    });
  const parsed = (state: string) => ({
    data: { program: 'spl-token', parsed: { info: { state }, type: 'account' } },
  });

  it('reads jsonParsed and base64 answers, and an account that does not exist', async () => {
    expect(await read(null)).toBe('absent');
    expect(await read(parsed('frozen'))).toBe('frozen');
    expect(await read(parsed('initialized'))).toBe('open');
    expect(await read({ data: [tokenBytes(2), 'base64'] })).toBe('frozen');
    expect(await read({ data: [tokenBytes(1), 'base64'] })).toBe('open');
  });

  it('refuses an answer that shows no token account state (never taken as open)', async () => {
    await expect(read({ data: [tokenBytes(0), 'base64'] })).rejects.toThrow(
      /does not show a token account's state/,
    );
    await expect(read({ data: { parsed: { info: {} } } })).rejects.toThrow(/token account's state/);
  });
});

describe('createUsdcControls', () => {
  const config = {
    network: 'testnet' as const,
    evmRpcUrl: { BASE: 'http://rpc.invalid/' },
    solanaRpcUrl: 'http://sol.invalid/',
  };

  it('keeps a reading at most a minute, and never keeps a failed read', async () => {
    let now = 0;
    let answers: (boolean | Error)[] = [false, true];
    let reads = 0;
    const evm = {
      usdcBlacklisted: async () => {
        reads++;
        const a = answers.shift();
        if (a instanceof Error) throw a;
        return a;
      },
    };
    const controls = createUsdcControls({ config, evm, now: () => now, maxAgeMs: 10 * 60_000 });
    expect(await controls.blacklisted('BASE', A)).toBe(false);
    now = 59_999;
    // The same address in another case is the same reading.
    expect(await controls.blacklisted('BASE', A.toUpperCase().replace('0X', '0x'))).toBe(false);
    expect(reads).toBe(1);
    now = 60_000;
    expect(await controls.blacklisted('BASE', A)).toBe(true);
    expect(reads).toBe(2);

    answers = [new Error('down'), false];
    expect(await controls.blacklisted('BASE', B).catch((e: Error) => e.message)).toBe('down');
    expect(await controls.blacklisted('BASE', B)).toBe(false);
    expect(reads).toBe(4);
  });

  it('screens a chain only where an RPC is configured, and reads the wallet’s USDC account', async () => {
    const rpc = solanaRpc(() => ({ data: { parsed: { info: { state: 'frozen' } } } }));
    const controls = createUsdcControls({ config, fetch: rpc.fetch });
    expect(['BASE', 'ARB', 'SOLANA'].map((c) => controls.screens(c as 'BASE'))).toEqual([true, false, true]);
    const wallet = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';
    const read = await controls.solanaAccount(wallet);
    expect(read.state).toBe('frozen');
    // The account asked about is the wallet's associated token account, not the wallet.
    expect((rpc.calls[0] as unknown[])[0]).toBe(read.account);
    expect(read.account).not.toBe(wallet);
  });
});
