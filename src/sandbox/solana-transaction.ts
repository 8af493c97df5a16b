import { createHash } from 'node:crypto';
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createKeyPairFromPrivateKeyBytes,
  createNoopSigner,
  createTransactionMessage,
  getAddressFromPublicKey,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getProgramDerivedAddress,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from '@solana-program/memo';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  AuthorityType,
  TOKEN_PROGRAM_ADDRESS,
  findAssociatedTokenPda,
  getApproveInstruction,
  getCloseAccountInstruction,
  getSetAuthorityInstruction,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import { encodeBase58 } from '../domain/base58.ts';
import {
  CCTP_DOMAIN,
  CCTP_PROGRAMS,
  SOLANA_USDC_MINT,
  type EvmChain,
  type Network,
} from '../domain/chains.ts';
import { USDC_DECIMALS } from '../domain/money.ts';

/**
 * Every kind of transaction the signing policy (docs/promises.md, promise 3) must refuse. Each one is
 * the legitimate payment with exactly one thing wrong.
 */
export const MALICIOUS_SOLANA_KINDS = [
  /** adds a System transfer of SOL out of the wallet */
  'sol_transfer',
  /** the USDC TransferChecked moves more than the requested amount */
  'inflated_amount',
  /** adds a second USDC TransferChecked to a third party's token account */
  'extra_transfer',
  /** adds an SPL Token Approve of the wallet's token account to a delegate */
  'approve_delegate',
  /** adds an SPL Token CloseAccount of the wallet's token account */
  'close_account',
  /** adds an SPL Token SetAuthority (AccountOwner) of the wallet's token account */
  'set_authority',
  /** the wallet pays the fees */
  'wallet_fee_payer',
  /** adds an instruction of a program outside the allowed list, with the wallet as signer */
  'unknown_program',
  /** the transfer goes through the Token-2022 program instead of SPL Token */
  'token2022_transfer',
  /** the transfer moves another mint than USDC */
  'other_mint',
  /** the destination account is loaded through an address lookup table */
  'address_lookup_table',
  /** a CCTP deposit_for_burn whose mint_recipient is not the row's recipient */
  'cctp_other_recipient',
  /** a CCTP deposit_for_burn to another destination domain than the row's chain */
  'cctp_other_domain',
] as const;

/** `legit`: compute budget + USDC TransferChecked + memo. `cctp_v1`/`cctp_v2`: compute budget + CCTP deposit_for_burn + memo. */
export const LEGIT_SOLANA_KINDS = ['legit', 'cctp_v1', 'cctp_v2'] as const;
export const SOLANA_TX_KINDS = [...LEGIT_SOLANA_KINDS, ...MALICIOUS_SOLANA_KINDS] as const;
export type SolanaTxKind = (typeof SOLANA_TX_KINDS)[number];

export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
/** Anchor discriminator of `deposit_for_burn` (sha256("global:deposit_for_burn")[0..8]), V1 and V2. */
export const CCTP_DEPOSIT_FOR_BURN_DISCRIMINATOR = Uint8Array.from([215, 60, 61, 46, 114, 55, 128, 176]);

const SYSTEM_PROGRAM = address('11111111111111111111111111111111');

function fixedAddress(label: string): Address {
  return address(encodeBase58(createHash('sha256').update(label).digest()));
}

/** Fixed stand-ins for an attacker, a program nobody allowed, a foreign mint and a lookup table. */
const SANDBOX_THIRD_PARTY = fixedAddress('usdc-batch sandbox: third party');
export const SANDBOX_UNKNOWN_PROGRAM = fixedAddress('usdc-batch sandbox: unknown program');
const SANDBOX_OTHER_MINT = fixedAddress('usdc-batch sandbox: other mint');
const SANDBOX_LOOKUP_TABLE = fixedAddress('usdc-batch sandbox: lookup table');

type SandboxTransferInput = {
  /** Default `legit`. */
  readonly kind?: SolanaTxKind;
  readonly network: Network;
  /** Pays the fees (the service's key; for `wallet_fee_payer`, ignored: the wallet pays). */
  readonly feePayer: string;
  /** `from_wallet`: the key whose signature the policy guards. */
  readonly wallet: string;
  /** micro-USDC requested */
  readonly amount: bigint;
  /** Destination EVM chain (CCTP domain, memo). */
  readonly to: EvmChain;
  /** The row's EVM recipient (CCTP mint_recipient, memo). */
  readonly recipient: string;
  /** Token account the USDC is paid into; default the fee payer's USDC associated token account. */
  readonly destination?: string;
  /** The attacker of the malicious kinds; default SANDBOX_THIRD_PARTY. */
  readonly thirdParty?: string;
  /** For `cctp_other_*`: which CCTP version to imitate; default 1. */
  readonly cctpVersion?: 1 | 2;
  readonly memo?: string;
  /** Default MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr (SPL Memo v2, the one in use on mainnet). */
  readonly memoProgram?: string;
  /** base58 32 bytes; default a fresh random one. */
  readonly blockhash?: string;
  readonly lastValidBlockHeight?: bigint;
};

type SandboxTransfer = {
  /** base64 wire transaction; no signature of feePayer or wallet yet (CCTP kinds: the event-data key has signed). */
  readonly transaction: string;
  /** The compiled message, for comparing what comes back signed. */
  readonly messageBytes: Uint8Array;
  /** The wallet's USDC associated token account (the source). */
  readonly sourceTokenAccount: string;
  /** Where the USDC goes (token transfer kinds). */
  readonly destination: string;
  readonly kind: SolanaTxKind;
};

/** The EVM recipient as CCTP's 32-byte `mint_recipient` (left-padded with zeros). */
export function evmRecipientBytes32(recipient: string): Uint8Array {
  const hex = recipient.replace(/^0x/i, '').toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(hex)) throw new TypeError('recipient must be a 20-byte EVM address');
  const out = new Uint8Array(32);
  for (let i = 0; i < 20; i++) out[12 + i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * CCTP `deposit_for_burn` instruction data. V1: discriminator, amount u64 LE, destination_domain
 * u32 LE, mint_recipient (32). V2 appends destination_caller (32, zero: anyone), max_fee u64 LE and
 * min_finality_threshold u32 LE.
 */
function encodeDepositForBurn(p: {
  version: 1 | 2;
  amount: bigint;
  destinationDomain: number;
  mintRecipient: Uint8Array;
  maxFee?: bigint;
  minFinalityThreshold?: number;
}): Uint8Array {
  const size = 8 + 8 + 4 + 32 + (p.version === 2 ? 32 + 8 + 4 : 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(CCTP_DEPOSIT_FOR_BURN_DISCRIMINATOR, 0);
  view.setBigUint64(8, p.amount, true);
  view.setUint32(16, p.destinationDomain, true);
  out.set(p.mintRecipient, 20);
  if (p.version === 2) {
    // destination_caller stays zero (bytes 52..84)
    view.setBigUint64(84, p.maxFee ?? 0n, true);
    view.setUint32(92, p.minFinalityThreshold ?? 2000, true);
  }
  return out;
}

async function pda(program: string, ...seeds: (string | Uint8Array)[]): Promise<Address> {
  const [a] = await getProgramDerivedAddress({ programAddress: address(program), seeds });
  return a;
}

/** A CCTP deposit_for_burn burning `amount` from the wallet's USDC account (accounts after Circle's layout). */
async function depositForBurn(p: {
  version: 1 | 2;
  wallet: Address;
  feePayer: Address;
  eventData: Address;
  source: Address;
  mint: Address;
  amount: bigint;
  domain: number;
  mintRecipient: Uint8Array;
}): Promise<Instruction> {
  const tmm = p.version === 1 ? CCTP_PROGRAMS.tokenMessengerMinterV1 : CCTP_PROGRAMS.tokenMessengerMinterV2;
  const mt = p.version === 1 ? CCTP_PROGRAMS.messageTransmitterV1 : CCTP_PROGRAMS.messageTransmitterV2;
  const ro = (a: Address) => ({ address: a, role: AccountRole.READONLY });
  const w = (a: Address) => ({ address: a, role: AccountRole.WRITABLE });
  return {
    programAddress: address(tmm),
    accounts: [
      { address: p.wallet, role: AccountRole.READONLY_SIGNER },
      { address: p.feePayer, role: AccountRole.WRITABLE_SIGNER },
      ro(await pda(tmm, 'sender_authority')),
      w(p.source),
      w(await pda(mt, 'message_transmitter')),
      ro(await pda(tmm, 'token_messenger')),
      ro(await pda(tmm, 'remote_token_messenger', String(p.domain))),
      ro(await pda(tmm, 'token_minter')),
      w(await pda(tmm, 'local_token', Uint8Array.from(getAddressEncoder().encode(p.mint)))),
      w(p.mint),
      { address: p.eventData, role: AccountRole.WRITABLE_SIGNER },
      ro(address(mt)),
      ro(address(tmm)),
      ro(TOKEN_PROGRAM_ADDRESS),
      ro(SYSTEM_PROGRAM),
      ro(await pda(tmm, '__event_authority')),
      ro(address(tmm)),
    ],
    data: encodeDepositForBurn({
      version: p.version,
      amount: p.amount,
      destinationDomain: p.domain,
      mintRecipient: p.mintRecipient,
    }),
  };
}

/** The accounts a sandbox transaction is built from. */
type Accounts = {
  readonly kind: SolanaTxKind;
  readonly wallet: Address;
  readonly walletSigner: ReturnType<typeof createNoopSigner>;
  readonly servicePayer: Address;
  readonly third: Address;
  readonly usdc: Address;
  /** Our USDC token account, and where the payment goes. */
  readonly source: Address;
  readonly destination: Address;
  readonly feePayer: Address;
};

type EventKey = Awaited<ReturnType<typeof createKeyPairFromPrivateKeyBytes>>;

const CCTP_KINDS: readonly SolanaTxKind[] = [
  'cctp_v1',
  'cctp_v2',
  'cctp_other_recipient',
  'cctp_other_domain',
];

/**
 * Builds the transaction the sandbox hands out from build-tx — the legitimate payment or one of
 * the malicious kinds — so that the signing policy can be tested against each (import it from
 * `src/sandbox/solana-transaction.ts`). Deterministic for a given input and `blockhash`, except
 * the CCTP kinds' one-off event-data key.
 */
export async function buildSandboxTransfer(input: SandboxTransferInput): Promise<SandboxTransfer> {
  const a = await accountsOf(input);
  const instructions: Instruction[] = [
    getSetComputeUnitLimitInstruction({ units: 200_000 }),
    getSetComputeUnitPriceInstruction({ microLamports: 1_000n }),
  ];
  const payment = await paymentInstruction(a, input);
  instructions.push(payment.instruction);
  const extra = await extraInstruction(a, input);
  if (extra) instructions.push(extra);
  // The Memo program deployed and used on mainnet today (the package's default is a newer one).
  instructions.push(
    getAddMemoInstruction(
      { memo: input.memo ?? `usdc-batch ${input.to} ${input.recipient}` },
      { programAddress: address(input.memoProgram ?? LEGACY_MEMO_PROGRAM_ADDRESS_V3) },
    ),
  );
  let tx = compileTransaction(messageOf(a, input, instructions));
  if (payment.eventKey) tx = await partiallySignTransaction([payment.eventKey], tx);
  return {
    transaction: getBase64EncodedWireTransaction(tx),
    messageBytes: Uint8Array.from(tx.messageBytes),
    sourceTokenAccount: a.source,
    destination: a.destination,
    kind: a.kind,
  };
}

async function ataOf(
  owner: Address,
  mint: Address,
  tokenProgram: Address = TOKEN_PROGRAM_ADDRESS,
): Promise<Address> {
  return (await findAssociatedTokenPda({ owner, mint, tokenProgram }))[0];
}

async function accountsOf(input: SandboxTransferInput): Promise<Accounts> {
  const kind = input.kind ?? 'legit';
  const wallet = address(input.wallet);
  const servicePayer = address(input.feePayer);
  const usdc = address(SOLANA_USDC_MINT[input.network]);
  return {
    kind,
    wallet,
    walletSigner: createNoopSigner(wallet),
    servicePayer,
    third: address(input.thirdParty ?? SANDBOX_THIRD_PARTY),
    usdc,
    source: await ataOf(wallet, usdc),
    destination: input.destination ? address(input.destination) : await ataOf(servicePayer, usdc),
    feePayer: kind === 'wallet_fee_payer' ? wallet : servicePayer,
  };
}

function usdcTransfer(a: Accounts, amount: bigint, to: Address = a.destination): Instruction {
  return getTransferCheckedInstruction({
    source: a.source,
    mint: a.usdc,
    destination: to,
    authority: a.walletSigner,
    amount,
    decimals: USDC_DECIMALS,
  });
}

/** The instruction that pays (or, for the malicious kinds, seems to pay) the requested amount. */
async function paymentInstruction(
  a: Accounts,
  input: SandboxTransferInput,
): Promise<{ instruction: Instruction; eventKey?: EventKey }> {
  if (CCTP_KINDS.includes(a.kind)) return await cctpBurn(a, input);
  switch (a.kind) {
    case 'inflated_amount':
      return { instruction: usdcTransfer(a, input.amount + 1_000_000n) };
    case 'token2022_transfer':
      return {
        instruction: getTransferCheckedInstruction(
          {
            source: await ataOf(a.wallet, a.usdc, address(TOKEN_2022_PROGRAM)),
            mint: a.usdc,
            destination: a.destination,
            authority: a.walletSigner,
            amount: input.amount,
            decimals: USDC_DECIMALS,
          },
          { programAddress: address(TOKEN_2022_PROGRAM) },
        ),
      };
    case 'other_mint':
      return {
        instruction: getTransferCheckedInstruction({
          source: await ataOf(a.wallet, SANDBOX_OTHER_MINT),
          mint: SANDBOX_OTHER_MINT,
          destination: await ataOf(a.servicePayer, SANDBOX_OTHER_MINT),
          authority: a.walletSigner,
          amount: input.amount,
          decimals: USDC_DECIMALS,
        }),
      };
    default:
      return { instruction: usdcTransfer(a, input.amount) };
  }
}

/** A CCTP deposit_for_burn, signed by the real service with a one-off key for the event account. */
async function cctpBurn(
  a: Accounts,
  input: SandboxTransferInput,
): Promise<{ instruction: Instruction; eventKey: EventKey }> {
  const version = a.kind === 'cctp_v2' ? 2 : a.kind === 'cctp_v1' ? 1 : (input.cctpVersion ?? 1);
  const seed = createHash('sha256')
    .update(`event:${input.blockhash ?? Math.random()}:${input.wallet}`)
    .digest();
  const eventKey = await createKeyPairFromPrivateKeyBytes(seed);
  const eventData = await getAddressFromPublicKey(eventKey.publicKey);
  let domain = CCTP_DOMAIN[input.to];
  let recipient = evmRecipientBytes32(input.recipient);
  if (a.kind === 'cctp_other_domain')
    domain = domain === CCTP_DOMAIN.BASE ? CCTP_DOMAIN.ARB : CCTP_DOMAIN.BASE;
  if (a.kind === 'cctp_other_recipient') recipient = evmRecipientBytes32(`0x${'ba'.repeat(20)}`);
  const instruction = await depositForBurn({
    version,
    wallet: a.wallet,
    feePayer: a.feePayer,
    eventData,
    source: a.source,
    mint: a.usdc,
    amount: input.amount,
    domain,
    mintRecipient: recipient,
  });
  return { instruction, eventKey };
}

/** What a malicious kind adds after the payment (nothing for the others). */
async function extraInstruction(a: Accounts, input: SandboxTransferInput): Promise<Instruction | undefined> {
  const { wallet, walletSigner, source, third } = a;
  switch (a.kind) {
    case 'sol_transfer':
      return getTransferSolInstruction({ source: walletSigner, destination: third, amount: 10_000_000n });
    case 'extra_transfer':
      return usdcTransfer(a, input.amount, await ataOf(third, a.usdc));
    case 'approve_delegate':
      return getApproveInstruction({ source, delegate: third, owner: walletSigner, amount: 2n ** 64n - 1n });
    case 'close_account':
      return getCloseAccountInstruction({ account: source, destination: third, owner: walletSigner });
    case 'set_authority':
      return getSetAuthorityInstruction({
        owned: source,
        owner: walletSigner,
        authorityType: AuthorityType.AccountOwner,
        newAuthority: third,
      });
    case 'unknown_program':
      return {
        programAddress: SANDBOX_UNKNOWN_PROGRAM,
        accounts: [
          { address: wallet, role: AccountRole.WRITABLE_SIGNER },
          { address: source, role: AccountRole.WRITABLE },
        ],
        data: Uint8Array.from([1, 2, 3, 4]),
      };
    default:
      return undefined;
  }
}

/** The v0 message: fee payer, blockhash lifetime, the instructions (and a lookup table for that kind). */
function messageOf(a: Accounts, input: SandboxTransferInput, instructions: readonly Instruction[]) {
  const blockhash = (input.blockhash ??
    encodeBase58(createHash('sha256').update(String(Math.random())).digest())) as Blockhash;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(a.feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash, lastValidBlockHeight: input.lastValidBlockHeight ?? 1_000n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  if (a.kind !== 'address_lookup_table') return message;
  return compressTransactionMessageUsingAddressLookupTables(message, {
    [SANDBOX_LOOKUP_TABLE]: [a.destination],
  }) as typeof message;
}
