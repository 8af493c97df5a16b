import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  keccak256,
  parseAbi,
  type Hex,
  type PrivateKeyAccount,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import {
  addressToBytes32,
  CCTP_DOMAIN,
  decodeBurnMessageV2,
  decodeMessageV2,
  FINALITY_THRESHOLD,
  ZERO_BYTES32,
} from '../../src/domain/cctp.ts';
import { attestedBurnMismatches, parseCctpFees, parseCctpMessages } from '../../src/domain/cctp-answers.ts';
import { USDC_EVM, type EvmChain } from '../../src/domain/chains.ts';
import { createSandbox, type Sandbox } from '../../src/sandbox/sandbox.ts';
import { MESSAGE_TRANSMITTER_V2_ABI, TOKEN_MESSENGER_V2_ABI } from '../../src/signing/evm/cctp-abi.ts';
import { waitFor } from '../helpers/cli.ts';
import { sandboxAdmin } from '../helpers/sandbox.ts';
import { sandboxUsdc } from '../helpers/sandbox-usdc.ts';

/**
 * The sandbox's CCTP v2 road on its real anvils: burn → attestation → mint, judged by balances and
 * total supplies read from the chains, with every refusal of Circle's contracts and the
 * attestation API's states and faults. One sandbox for every case; each case has its own owner.
 */

const ERC20 = parseAbi([
  'function approve(address spender, uint256 value) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
  'function totalSupply() view returns (uint256)',
]);
const USDC = (chain: EvmChain) => USDC_EVM.testnet[chain].usdc;

let sandbox: Sandbox;

beforeAll(async () => {
  // No rate limit until the case that trips it (it blocks every later request).
  sandbox = await createSandbox({
    cctpStandardDelayMs: 200,
    cctpFastDelayMs: 0,
    cctpRateLimitPerSecond: null,
  });
});
afterAll(async () => {
  await sandbox?.close();
});

function chainDef(chain: EvmChain) {
  return defineChain({
    id: USDC_EVM.testnet[chain].chainId,
    name: chain,
    nativeCurrency: { name: 'ETH', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [sandbox.rpcUrl(chain)] } },
  });
}

const reader = (chain: EvmChain) =>
  createPublicClient({ chain: chainDef(chain), transport: http(sandbox.rpcUrl(chain)) });

function clients(chain: EvmChain, account: PrivateKeyAccount) {
  const def = chainDef(chain);
  return {
    read: createPublicClient({ chain: def, transport: http(sandbox.rpcUrl(chain)) }),
    write: createWalletClient({ chain: def, account, transport: http(sandbox.rpcUrl(chain)) }),
  };
}

/** A new owner the sandbox has met on `chain` (its USDC and its native gas funded), through a balanceOf read. */
async function newOwner(chain: EvmChain): Promise<PrivateKeyAccount> {
  const owner = privateKeyToAccount(generatePrivateKey());
  await reader(chain).readContract({
    address: USDC(chain),
    abi: ERC20,
    functionName: 'balanceOf',
    args: [owner.address],
  });
  return owner;
}

/** Reads straight from the anvil: a balanceOf over the sandbox's /rpc would meet (fund) the address. */
const chainReader = (chain: EvmChain) =>
  createPublicClient({ chain: chainDef(chain), transport: http(sandbox.nodes.evm[chain].url as string) });

const { balanceOf: usdcOf, supplyOf } = sandboxUsdc(() => sandbox.nodes);

type Burn = {
  from: EvmChain;
  to: EvmChain;
  owner: PrivateKeyAccount;
  amount: bigint;
  recipient: Hex;
  maxFee?: bigint;
  threshold?: number;
  destinationCaller?: Hex;
};

/** approve + depositForBurn from the owner; the burn's transaction hash (mined with status 1). */
async function burn(b: Burn): Promise<Hex> {
  const c = clients(b.from, b.owner);
  const { tokenMessenger } = sandbox.cctp.contracts(b.from);
  const approve = await c.write.writeContract({
    address: USDC(b.from),
    abi: ERC20,
    functionName: 'approve',
    args: [tokenMessenger as Hex, b.amount],
  });
  await c.read.waitForTransactionReceipt({ hash: approve });
  const hash = await c.write.writeContract({
    address: tokenMessenger as Hex,
    abi: TOKEN_MESSENGER_V2_ABI,
    functionName: 'depositForBurn',
    args: [
      b.amount,
      CCTP_DOMAIN[b.to],
      addressToBytes32(b.recipient),
      USDC(b.from),
      b.destinationCaller ?? ZERO_BYTES32,
      b.maxFee ?? 0n,
      b.threshold ?? FINALITY_THRESHOLD.standard,
    ],
  });
  const receipt = await c.read.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe('success');
  return hash;
}

type ApiMessage = {
  message: Hex;
  attestation: Hex | 'PENDING';
  eventNonce: Hex | null;
  status: 'pending_confirmations' | 'complete';
  cctpVersion: number;
  delayReason: string | null;
  decodedMessage: { decodedMessageBody: { amount: string; feeExecuted: string } } | null;
};

async function ask(path: string, init?: RequestInit) {
  const res = await fetch(`${sandbox.cctp.apiUrl}${path}`, init);
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const messagesOf = (chain: EvmChain, hash: Hex) =>
  ask(`/v2/messages/${CCTP_DOMAIN[chain]}?transactionHash=${hash}`);

/** Polls the attestation API (as a worker does) until the burn's message is complete. */
async function attested(chain: EvmChain, hash: Hex): Promise<ApiMessage> {
  return await waitFor(`the attestation of ${hash}`, async () => {
    const r = await messagesOf(chain, hash);
    const m = r.status === 200 ? (r.body['messages'] as ApiMessage[])[0] : undefined;
    return m?.status === 'complete' ? m : undefined;
  });
}

async function mint(chain: EvmChain, by: PrivateKeyAccount, message: Hex, attestation: Hex): Promise<void> {
  const c = clients(chain, by);
  const hash = await c.write.writeContract({
    address: sandbox.cctp.contracts(chain).messageTransmitter as Hex,
    abi: MESSAGE_TRANSMITTER_V2_ABI,
    functionName: 'receiveMessage',
    args: [message, attestation],
  });
  expect((await c.read.waitForTransactionReceipt({ hash })).status).toBe('success');
}

/** What `receiveMessage` would do, as the refusal's reason (viem puts the revert string in its message). */
async function mintRefusal(chain: EvmChain, by: PrivateKeyAccount, message: Hex, attestation: Hex) {
  return await clients(chain, by)
    .read.simulateContract({
      account: by,
      address: sandbox.cctp.contracts(chain).messageTransmitter as Hex,
      abi: MESSAGE_TRANSMITTER_V2_ABI,
      functionName: 'receiveMessage',
      args: [message, attestation],
    })
    .then(
      () => 'accepted',
      (e: Error) => e.message,
    );
}

describe('the sandbox’s CCTP v2 road', () => {
  it('Standard: burns at once, attests at threshold 2000 with no fee, mints the amount once ("Nonce already used" after)', async () => {
    const owner = await newOwner('ETH');
    const minter = await newOwner('BASE'); // met (funded) before the supplies are read
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const [ownerBefore, ethSupply, baseSupply] = await Promise.all([
      usdcOf('ETH', owner.address),
      supplyOf('ETH'),
      supplyOf('BASE'),
    ]);
    const hash = await burn({ from: 'ETH', to: 'BASE', owner, amount: 100_000_000n, recipient });
    expect(await usdcOf('ETH', owner.address)).toBe(ownerBefore - 100_000_000n);
    expect(await supplyOf('ETH')).toBe(ethSupply - 100_000_000n);

    const m = await attested('ETH', hash);
    const decoded = decodeMessageV2(m.message);
    expect(decoded).toMatchObject({
      sourceDomain: 0,
      destinationDomain: 6,
      finalityThresholdExecuted: FINALITY_THRESHOLD.standard,
      nonce: m.eventNonce,
    });
    expect(decodeBurnMessageV2(decoded.messageBody)).toMatchObject({ amount: 100_000_000n, feeExecuted: 0n });
    expect(m.cctpVersion).toBe(2);
    // The worker's parser reads the sandbox's answer, and finds in it exactly the burn it made.
    const parsed = parseCctpMessages((await messagesOf('ETH', hash)).body);
    const complete = parsed.ok ? parsed.value[0] : undefined;
    if (complete?.status !== 'complete') throw new Error(`not parsed: ${JSON.stringify(parsed)}`);
    expect(
      attestedBurnMismatches(complete, {
        sourceDomain: CCTP_DOMAIN.ETH,
        destinationDomain: CCTP_DOMAIN.BASE,
        tokenMessenger: sandbox.cctp.contracts('ETH').tokenMessenger as Hex,
        destinationTokenMessenger: sandbox.cctp.contracts('BASE').tokenMessenger as Hex,
        burnToken: USDC('ETH'),
        mintRecipient: addressToBytes32(recipient),
        amount: 100_000_000n,
        owner: owner.address,
        destinationCaller: ZERO_BYTES32,
        maxFee: 0n,
        minFinalityThreshold: FINALITY_THRESHOLD.standard,
      }),
    ).toEqual([]);

    await mint('BASE', minter, m.message, m.attestation as Hex);
    expect(await usdcOf('BASE', recipient)).toBe(100_000_000n);
    expect(await supplyOf('BASE')).toBe(baseSupply + 100_000_000n);

    expect(await mintRefusal('BASE', minter, m.message, m.attestation as Hex)).toMatch(/Nonce already used/);
    const used = await clients('BASE', minter).read.readContract({
      address: sandbox.cctp.contracts('BASE').messageTransmitter as Hex,
      abi: MESSAGE_TRANSMITTER_V2_ABI,
      functionName: 'usedNonces',
      args: [m.eventNonce as Hex],
    });
    expect(used).toBe(1n);
    expect(await usdcOf('BASE', recipient)).toBe(100_000_000n);
  });

  it('Fast: attests at threshold 1000 with the quoted fee, mints amount − fee and the fee to the fee recipient', async () => {
    const fees = await ask('/v2/burn/USDC/fees/3/7');
    expect(parseCctpFees(fees.body).ok).toBe(true);
    expect(fees.body).toEqual([
      { finalityThreshold: 1000, minimumFee: 1 },
      { finalityThreshold: 2000, minimumFee: 0 },
    ]);
    const allowanceBefore = (await ask('/v2/fastBurn/USDC/allowance')).body['allowance'];
    const owner = await newOwner('ARB');
    const minter = await newOwner('POLYGON');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const [feesBefore, polygonSupply] = await Promise.all([
      usdcOf('POLYGON', sandbox.cctp.feeRecipient),
      supplyOf('POLYGON'),
    ]);
    const hash = await burn({
      from: 'ARB',
      to: 'POLYGON',
      owner,
      amount: 50_000_000n,
      recipient,
      maxFee: 10_000n,
      threshold: FINALITY_THRESHOLD.fast,
    });
    // Three workers asking at once (Fast attests at once here): one attestation, the allowance used once.
    const asks = await Promise.all([1, 2, 3].map(() => messagesOf('ARB', hash)));
    const all = asks.map((a) => (a.body['messages'] as ApiMessage[])[0]);
    expect(all.map((a) => a?.status)).toEqual(['complete', 'complete', 'complete']);
    expect(new Set(all.map((a) => a?.attestation)).size).toBe(1);
    const m = all[0] as ApiMessage;
    expect(decodeMessageV2(m.message).finalityThresholdExecuted).toBe(FINALITY_THRESHOLD.fast);
    expect(m.decodedMessage?.decodedMessageBody.feeExecuted).toBe('5000'); // 1 bp of 50 USDC
    expect((await ask('/v2/fastBurn/USDC/allowance')).body['allowance']).toBe(Number(allowanceBefore) - 50);

    await mint('POLYGON', minter, m.message, m.attestation as Hex);
    expect(await usdcOf('POLYGON', recipient)).toBe(50_000_000n - 5_000n);
    expect(await usdcOf('POLYGON', sandbox.cctp.feeRecipient)).toBe(feesBefore + 5_000n);
    expect(await supplyOf('POLYGON')).toBe(polygonSupply + 50_000_000n);
  });

  it('refuses a tampered message, a forged or cut attestation, a fee above maxFee, and a burn whose maxFee is not below its amount', async () => {
    const owner = await newOwner('BASE');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const hash = await burn({ from: 'BASE', to: 'ARB', owner, amount: 7_000_000n, recipient, maxFee: 100n });
    const m = await attested('BASE', hash);
    const minter = await newOwner('ARB');
    const body = decodeBurnMessageV2(decodeMessageV2(m.message).messageBody);
    // The amount raised after signing: the attester's signature no longer recovers.
    const tampered = m.message.replace(
      body.amount.toString(16).padStart(64, '0'),
      70_000_000n.toString(16).padStart(64, '0'),
    ) as Hex;
    expect(tampered).not.toBe(m.message);
    expect(await mintRefusal('ARB', minter, tampered, m.attestation as Hex)).toMatch(
      /Invalid signature: not attester/,
    );
    const forged = await privateKeyToAccount(generatePrivateKey()).sign({ hash: keccak256(m.message) });
    expect(await mintRefusal('ARB', minter, m.message, forged)).toMatch(/Invalid signature: not attester/);
    expect(await mintRefusal('ARB', minter, m.message, (m.attestation as Hex).slice(0, 130) as Hex)).toMatch(
      /Invalid attestation length/,
    );
    // Signed by the attester itself, but with a fee above the burn's maxFee of 100.
    const greedy = sandbox.cctp.fill(m.message, {
      nonce: decodeMessageV2(m.message).nonce,
      finality: 2000,
      fee: 101n,
      expirationBlock: 0n,
    });
    expect(await mintRefusal('ARB', minter, greedy, await sandbox.cctp.attest(greedy))).toMatch(
      /Fee exceeds max fee/,
    );

    const c = clients('BASE', owner);
    const refused = await c.read
      .simulateContract({
        account: owner,
        address: sandbox.cctp.contracts('BASE').tokenMessenger as Hex,
        abi: TOKEN_MESSENGER_V2_ABI,
        functionName: 'depositForBurn',
        args: [
          1_000n,
          CCTP_DOMAIN.ARB,
          addressToBytes32(recipient),
          USDC('BASE'),
          ZERO_BYTES32,
          1_000n,
          2000,
        ],
      })
      .then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(refused).toMatch(/Max fee must be less than amount/);
    // Nothing was minted by any refused call; the real message still mints.
    expect(await usdcOf('ARB', recipient)).toBe(0n);
    await mint('ARB', minter, m.message, m.attestation as Hex);
    expect(await usdcOf('ARB', recipient)).toBe(7_000_000n);
  });

  it('an expired attestation is refused, then reattested with the same nonce and minted', async () => {
    await sandbox.admin.configure({ cctpExpiredAttestations: 1 });
    const owner = await newOwner('POLYGON');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const hash = await burn({ from: 'POLYGON', to: 'ETH', owner, amount: 3_000_000n, recipient });
    const expired = await attested('POLYGON', hash);
    const minter = await newOwner('ETH');
    expect(await mintRefusal('ETH', minter, expired.message, expired.attestation as Hex)).toMatch(
      /Message expired and must be re-signed/,
    );
    expect(sandbox.admin.config().cctpExpiredAttestations).toBe(0);

    const re = await ask(`/v2/reattest/${expired.eventNonce}`, { method: 'POST' });
    expect(re.status).toBe(200);
    expect(re.body['nonce']).toBe(expired.eventNonce);
    const fresh = await attested('POLYGON', hash);
    expect(fresh.eventNonce).toBe(expired.eventNonce);
    expect(fresh.attestation).not.toBe(expired.attestation);
    await mint('ETH', minter, fresh.message, fresh.attestation as Hex);
    expect(await usdcOf('ETH', recipient)).toBe(3_000_000n);
    expect((await ask(`/v2/reattest/0x${'12'.repeat(32)}`, { method: 'POST' })).status).toBe(404);
  });

  it('a destinationCaller is the only address that may mint the message', async () => {
    const owner = await newOwner('ARB');
    const caller = await newOwner('BASE');
    const stranger = await newOwner('BASE');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const hash = await burn({
      from: 'ARB',
      to: 'BASE',
      owner,
      amount: 2_000_000n,
      recipient,
      destinationCaller: addressToBytes32(caller.address),
    });
    const m = await attested('ARB', hash);
    expect(await mintRefusal('BASE', stranger, m.message, m.attestation as Hex)).toMatch(
      /Invalid caller for message/,
    );
    await mint('BASE', caller, m.message, m.attestation as Hex);
    expect(await usdcOf('BASE', recipient)).toBe(2_000_000n);
  });

  it('funds an owner it meets with native gas, and a drill sets it (an owner that cannot pay)', async () => {
    const owner = await newOwner('ARB');
    const admin = sandboxAdmin(sandbox.url);
    expect(await admin.nativeBalance('ARB', owner.address)).toBe(10n ** 19n);
    // Met on ARB, given gas on every other chain (its mints are sent there), but no USDC there.
    expect(await admin.nativeBalance('POLYGON', owner.address)).toBe(10n ** 19n);
    expect(await usdcOf('POLYGON', owner.address)).toBe(0n);
    await admin.setNativeBalance('ARB', owner.address, 0n);
    expect(await chainReader('ARB').getBalance({ address: owner.address })).toBe(0n);
    const info = await admin.info();
    expect(info.cctp).toMatchObject({ api_url: sandbox.cctp.apiUrl, attester: sandbox.cctp.attester });
  });

  it('the attestation API: 404 until it has seen the burn, pending_confirmations, then complete; 400 for a bad query', async () => {
    await sandbox.admin.configure({ cctpNotFoundMs: 600_000, cctpStandardDelayMs: 600_000 });
    const owner = await newOwner('BASE');
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const hash = await burn({ from: 'BASE', to: 'ETH', owner, amount: 1_000_000n, recipient });
    expect((await messagesOf('BASE', hash)).status).toBe(404);
    expect((await messagesOf('ETH', hash)).status).toBe(404); // not a burn on that domain
    await sandbox.admin.configure({ cctpNotFoundMs: 0 });
    const pending = await messagesOf('BASE', hash);
    expect(pending.status).toBe(200);
    expect((pending.body['messages'] as ApiMessage[])[0]).toMatchObject({
      status: 'pending_confirmations',
      attestation: 'PENDING',
    });
    await sandbox.admin.configure({ cctpStandardDelayMs: 0 });
    const done = (await messagesOf('BASE', hash)).body['messages'] as ApiMessage[];
    expect(done[0]?.status).toBe('complete');
    const byNonce = await ask(`/v2/messages/6?nonce=${done[0]?.eventNonce}`);
    expect((byNonce.body['messages'] as ApiMessage[])[0]?.attestation).toBe(done[0]?.attestation);
    expect((await ask(`/v2/messages/6?transactionHash=0x12`)).status).toBe(400);
    expect((await ask(`/v2/messages/99?transactionHash=${hash}`)).status).toBe(400);
    expect((await ask(`/v2/burn/USDC/fees/0/0`)).status).toBe(400);
  });

  it('faults on /cctp: a scripted 429 with Retry-After, a 503, and Circle’s rate limit blocking every request', async () => {
    const owner = await newOwner('ETH');
    const hash = await burn({
      from: 'ETH',
      to: 'ARB',
      owner,
      amount: 1_000_000n,
      recipient: privateKeyToAccount(generatePrivateKey()).address,
    });
    await sandbox.admin.configure({
      faultScript: [
        { op: 'cctp', fault: 'rate_limit' },
        { op: 'cctp', fault: 'fail_before' },
      ],
      retryAfterSeconds: 7,
    });
    const limited = await messagesOf('ETH', hash);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect((await messagesOf('ETH', hash)).status).toBe(503);
    expect((await messagesOf('ETH', hash)).status).toBe(200);

    // Circle's limit, made 1 a second: the second request at once trips it, and then every one is refused.
    await sandbox.admin.configure({ cctpRateLimitPerSecond: 1, cctpRateLimitBlockMs: 600_000 });
    const answers = await Promise.all([1, 2, 3].map(() => messagesOf('ETH', hash)));
    expect(answers.map((a) => a.status)).toContain(429);
    const after = await ask('/v2/burn/USDC/fees/0/3');
    expect(after.status).toBe(429);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThan(500);
    expect(sandbox.admin.requests().filter((r) => r.op === 'cctp').length).toBeGreaterThan(5);
  });
});
