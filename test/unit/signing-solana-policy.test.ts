import { describe, expect, it, beforeAll } from 'vitest';
import { address, createNoopSigner, type Instruction } from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  AuthorityType,
  getApproveInstruction,
  getCloseAccountInstruction,
  getSetAuthorityInstruction,
} from '@solana-program/token';
import { loadConfig } from '../../src/config/load-config.ts';
import { signingKeys } from '../../src/signing/evm/keystore.ts';
import { encodeBase58 } from '../../src/domain/base58.ts';
import { CCTP_DOMAIN, CCTP_PROGRAMS, SOLANA_USDC_MINT } from '../../src/domain/chains.ts';
import { createSolanaSigner } from '../../src/signing/solana/solana-signer.ts';
import type { PolicyVerdict, SolanaExpectation, SolanaSigner } from '../../src/signing/types.ts';
import {
  ataOf,
  buildTx,
  computeBudget,
  depositForBurn,
  fixedSolanaKey,
  labelAddress,
  memo,
  plainTransfer,
  transferChecked,
} from '../helpers/solana-tx.ts';

const MINT = SOLANA_USDC_MINT.testnet;
const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
const RECIPIENT = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const EXPECTED: SolanaExpectation = { amount: 12_500_000n, recipient: RECIPIENT, to: 'BASE' };

let wallet: string;
let secret: Uint8Array;
let service: Awaited<ReturnType<typeof fixedSolanaKey>>;
let ourAta: string;
let serviceAta: string;
let third: string;
let signer: SolanaSigner;

const signerWith = async (env: Record<string, string> = {}) =>
  createSolanaSigner({
    config: loadConfig(
      { NETWORK: 'testnet', SOLANA_PRIVATE_KEY: encodeBase58(secret), ...env },
      { keys: signingKeys },
    ),
  });

beforeAll(async () => {
  const key = await fixedSolanaKey('treasury');
  wallet = key.address;
  secret = key.secret;
  service = await fixedSolanaKey('service fee payer');
  ourAta = await ataOf(wallet, MINT);
  serviceAta = await ataOf(service.address, MINT);
  third = labelAddress('third party');
  signer = await signerWith();
});

const pay = (amount = EXPECTED.amount, destination = serviceAta): Instruction =>
  transferChecked({ source: ourAta, mint: MINT, destination, authority: wallet, amount });
const legit = (extra: Instruction[] = [], payment: Instruction = pay()) =>
  buildTx({
    feePayer: service.address,
    instructions: [...computeBudget(), payment, ...extra, memo('payout 42')],
  });
const burn = (p: {
  version: 1 | 2;
  domain?: number;
  recipient?: string;
  amount?: bigint;
  rentPayer?: string;
}) =>
  depositForBurn({
    program: p.version === 1 ? CCTP_PROGRAMS.tokenMessengerMinterV1 : CCTP_PROGRAMS.tokenMessengerMinterV2,
    owner: wallet,
    rentPayer: p.rentPayer ?? service.address,
    eventData: labelAddress('event data'),
    source: ourAta,
    mint: MINT,
    version: p.version,
    amount: p.amount ?? EXPECTED.amount,
    domain: p.domain ?? CCTP_DOMAIN.BASE,
    evmRecipient: p.recipient ?? RECIPIENT,
  });
const refused = (v: PolicyVerdict) => {
  expect(v.ok).toBe(false);
  return v as Extract<PolicyVerdict, { ok: false }>;
};

describe('Solana transaction policy: accepts the payment asked for', () => {
  it('accepts a USDC TransferChecked of the requested amount from our token account', async () => {
    expect(signer.check(await legit(), EXPECTED)).toEqual({ ok: true });
  });

  it('accepts a plain Transfer from our USDC token account', async () => {
    const tx = await legit(
      [],
      plainTransfer({ source: ourAta, destination: serviceAta, authority: wallet, amount: EXPECTED.amount }),
    );
    expect(signer.check(tx, EXPECTED)).toEqual({ ok: true });
  });

  it('accepts a CCTP V1 deposit_for_burn of the requested amount to the row recipient and domain', async () => {
    expect(signer.check(await legit([], burn({ version: 1 })), EXPECTED)).toEqual({ ok: true });
  });

  it('accepts a CCTP V2 deposit_for_burn (longer data layout) of the requested amount', async () => {
    expect(signer.check(await legit([], burn({ version: 2 })), EXPECTED)).toEqual({ ok: true });
  });

  it('accepts paying less than requested (the limit is "at most")', async () => {
    expect(signer.check(await legit([], pay(EXPECTED.amount - 1n)), EXPECTED)).toEqual({ ok: true });
  });
});

describe('Solana transaction policy: refuses anything more', () => {
  it('refuses a SOL transfer from our key', async () => {
    const sol = getTransferSolInstruction({
      source: createNoopSigner(address(wallet)),
      destination: address(third),
      amount: 1_000_000_000n,
    });
    const v = refused(signer.check(await legit([sol]), EXPECTED));
    expect(v.instruction).toBe(3);
    expect(v.reason).toMatch(/System/);
  });

  it('refuses an inflated amount', async () => {
    const v = refused(signer.check(await legit([], pay(EXPECTED.amount + 1n)), EXPECTED));
    expect(v.reason).toMatch(/more than the requested/);
  });

  it('refuses an extra transfer to a third party', async () => {
    const extra = transferChecked({
      source: ourAta,
      mint: MINT,
      destination: await ataOf(third, MINT),
      authority: wallet,
      amount: 1n,
    });
    const v = refused(signer.check(await legit([extra]), EXPECTED));
    expect(v.reason).toMatch(/more than the requested/);
  });

  it('refuses an approve of our token account to a delegate', async () => {
    const approve = getApproveInstruction({
      source: address(ourAta),
      delegate: address(third),
      owner: createNoopSigner(address(wallet)),
      amount: 1n,
    });
    const v = refused(signer.check(await legit([approve]), EXPECTED));
    expect(v).toMatchObject({ instruction: 3 });
    expect(v.reason).toMatch(/Approve/);
  });

  it('refuses closing our token account', async () => {
    const close = getCloseAccountInstruction({
      account: address(ourAta),
      destination: address(third),
      owner: createNoopSigner(address(wallet)),
    });
    const v = refused(signer.check(await legit([close]), EXPECTED));
    expect(v).toMatchObject({ instruction: 3 });
    expect(v.reason).toMatch(/CloseAccount/);
  });

  it('refuses a set-authority on our token account', async () => {
    const setAuth = getSetAuthorityInstruction({
      owned: address(ourAta),
      owner: createNoopSigner(address(wallet)),
      authorityType: AuthorityType.AccountOwner,
      newAuthority: address(third),
    });
    const v = refused(signer.check(await legit([setAuth]), EXPECTED));
    expect(v).toMatchObject({ instruction: 3 });
    expect(v.reason).toMatch(/SetAuthority/);
  });

  it('refuses our key as the fee payer', async () => {
    const tx = await buildTx({ feePayer: wallet, instructions: [pay()] });
    const v = refused(signer.check(tx, EXPECTED));
    expect(v).toMatchObject({ instruction: null });
    expect(v.reason).toMatch(/fee payer/);
  });

  it('refuses an unknown program, even without our key', async () => {
    const odd: Instruction = {
      programAddress: labelAddress('unknown program'),
      accounts: [],
      data: Uint8Array.from([1]),
    };
    const v = refused(signer.check(await legit([odd]), EXPECTED));
    expect(v).toMatchObject({ instruction: 3 });
    expect(v.reason).toMatch(/is not allowed/);
  });

  it('refuses a Token-2022 transfer', async () => {
    const t22 = transferChecked({
      source: await ataOf(wallet, MINT, TOKEN_2022),
      mint: MINT,
      destination: serviceAta,
      authority: wallet,
      amount: EXPECTED.amount,
      programAddress: TOKEN_2022,
    });
    const v = refused(signer.check(await legit([], t22), EXPECTED));
    expect(v).toMatchObject({ instruction: 2 });
    expect(v.reason).toMatch(/Token-2022/);
  });

  it('refuses a transfer of another mint', async () => {
    const other = labelAddress('other mint');
    const t = transferChecked({
      source: await ataOf(wallet, other),
      mint: other,
      destination: serviceAta,
      authority: wallet,
      amount: 1n,
    });
    const v = refused(signer.check(await legit([t]), EXPECTED));
    expect(v).toMatchObject({ instruction: 3 });
    expect(v.reason).toMatch(/another mint/);
  });

  it('refuses a plain Transfer that is not from our USDC token account (it could be another mint)', async () => {
    const other = await ataOf(wallet, labelAddress('other mint'));
    const t = plainTransfer({ source: other, destination: serviceAta, authority: wallet, amount: 1n });
    const v = refused(signer.check(await legit([t]), EXPECTED));
    expect(v.reason).toMatch(/not from our USDC token account/);
  });

  it('refuses address lookup tables', async () => {
    const tx = await buildTx({
      feePayer: service.address,
      instructions: [pay()],
      lookupTable: { table: labelAddress('lookup table'), addresses: [serviceAta] },
    });
    const v = refused(signer.check(tx, EXPECTED));
    expect(v.reason).toMatch(/lookup table/);
  });

  it('refuses a CCTP burn to another recipient', async () => {
    const v = refused(
      signer.check(await legit([], burn({ version: 1, recipient: `0x${'ba'.repeat(20)}` })), EXPECTED),
    );
    expect(v).toMatchObject({ instruction: 2 });
    expect(v.reason).toMatch(/mint_recipient/);
  });

  it('refuses a CCTP burn to another domain', async () => {
    const v = refused(signer.check(await legit([], burn({ version: 2, domain: CCTP_DOMAIN.ARB })), EXPECTED));
    expect(v).toMatchObject({ instruction: 2 });
    expect(v.reason).toMatch(/domain 3, expected 6/);
  });

  it('refuses a CCTP burn of more than requested', async () => {
    const v = refused(
      signer.check(await legit([], burn({ version: 1, amount: EXPECTED.amount + 1n })), EXPECTED),
    );
    expect(v.reason).toMatch(/more than the requested/);
  });

  it('refuses a CCTP burn whose event account rent our key pays', async () => {
    const v = refused(signer.check(await legit([], burn({ version: 1, rentPayer: wallet })), EXPECTED));
    expect(v.reason).toMatch(/rent/);
  });

  it('refuses a transfer outside SOLANA_ALLOWED_DESTINATIONS', async () => {
    const restricted = await signerWith({ SOLANA_ALLOWED_DESTINATIONS: labelAddress('treasury vault') });
    const v = refused(restricted.check(await legit(), EXPECTED));
    expect(v).toMatchObject({ instruction: 2 });
    expect(v.reason).toMatch(/SOLANA_ALLOWED_DESTINATIONS/);
  });

  it('accepts a transfer into SOLANA_ALLOWED_DESTINATIONS (a token account, or a listed wallet’s USDC account)', async () => {
    const byAccount = await signerWith({ SOLANA_ALLOWED_DESTINATIONS: `${labelAddress('x')},${serviceAta}` });
    expect(byAccount.check(await legit(), EXPECTED)).toEqual({ ok: true });
    const byWallet = await signerWith({ SOLANA_ALLOWED_DESTINATIONS: service.address });
    expect(byWallet.check(await legit(), EXPECTED)).toEqual({ ok: true });
  });

  it('refuses a transaction our key does not sign', async () => {
    const t = transferChecked({
      source: serviceAta,
      mint: MINT,
      destination: ourAta,
      authority: service.address,
      amount: 1n,
    });
    const v = refused(
      signer.check(await buildTx({ feePayer: service.address, instructions: [t] }), EXPECTED),
    );
    expect(v.reason).toMatch(/not a required signer/);
  });

  it('refuses bytes that are not a transaction', () => {
    expect(refused(signer.check('bm90IGEgdHJhbnNhY3Rpb24=', EXPECTED)).reason).toMatch(/cannot be decoded/);
    expect(refused(signer.check('%%%', EXPECTED)).reason).toMatch(/cannot be decoded/);
  });
});
