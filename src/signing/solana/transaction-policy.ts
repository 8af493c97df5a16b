import {
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type CompiledTransactionMessage,
  type ReadonlyUint8Array,
  type SignatureBytes,
  type Transaction,
  type TransactionMessageBytes,
} from '@solana/kit';
import {
  ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  TOKEN_PROGRAM_ADDRESS,
  TokenInstruction,
} from '@solana-program/token';
import { LEGACY_MEMO_PROGRAM_ADDRESS_V1, SUPPORTED_MEMO_PROGRAM_ADDRESSES } from '@solana-program/memo';
import { COMPUTE_BUDGET_PROGRAM_ADDRESS } from '@solana-program/compute-budget';
import { SYSTEM_PROGRAM_ADDRESS } from '@solana-program/system';
import { CCTP_DOMAIN, CCTP_PROGRAMS } from '../../domain/chains.ts';
import type { PolicyVerdict, SolanaExpectation } from '../types.ts';
import { decodeLegacyOrV0Message } from './compiled-message.ts';

/** Token-2022: named only to say why it is refused (transfer hooks would run programs we did not allow). */
export const TOKEN_2022_PROGRAM_ADDRESS = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

/** Anchor discriminator of CCTP's `deposit_for_burn` (sha256("global:deposit_for_burn")[..8]), V1 and V2. */
export const DEPOSIT_FOR_BURN_DISCRIMINATOR = Uint8Array.from([215, 60, 61, 46, 114, 55, 128, 176]);
/** discriminator 8 + amount u64 + destination_domain u32 + mint_recipient 32. V2 appends more fields. */
const DEPOSIT_FOR_BURN_V1_LEN = 8 + 8 + 4 + 32;

const PROGRAM_NAMES: Readonly<Record<string, string>> = {
  [TOKEN_PROGRAM_ADDRESS]: 'SPL Token',
  [ASSOCIATED_TOKEN_PROGRAM_ADDRESS]: 'Associated Token',
  [COMPUTE_BUDGET_PROGRAM_ADDRESS]: 'Compute Budget',
  [CCTP_PROGRAMS.tokenMessengerMinterV1]: 'CCTP TokenMessengerMinter V1',
  [CCTP_PROGRAMS.tokenMessengerMinterV2]: 'CCTP TokenMessengerMinter V2',
  [CCTP_PROGRAMS.messageTransmitterV1]: 'CCTP MessageTransmitter V1',
  [CCTP_PROGRAMS.messageTransmitterV2]: 'CCTP MessageTransmitter V2',
  ...Object.fromEntries(
    [LEGACY_MEMO_PROGRAM_ADDRESS_V1, ...SUPPORTED_MEMO_PROGRAM_ADDRESSES].map((a) => [a, 'Memo']),
  ),
};
/** Programs a transaction we sign may call at top level (docs/promises.md, promise 3). */
export const ALLOWED_PROGRAMS: ReadonlySet<string> = new Set(Object.keys(PROGRAM_NAMES));
const KNOWN_NAMES: Readonly<Record<string, string>> = {
  ...PROGRAM_NAMES,
  [TOKEN_2022_PROGRAM_ADDRESS]: 'Token-2022',
  [SYSTEM_PROGRAM_ADDRESS]: 'System',
};
const TOKEN_MESSENGER_MINTERS: ReadonlySet<string> = new Set([
  CCTP_PROGRAMS.tokenMessengerMinterV1,
  CCTP_PROGRAMS.tokenMessengerMinterV2,
]);
const MEMO_PROGRAMS: ReadonlySet<string> = new Set([
  LEGACY_MEMO_PROGRAM_ADDRESS_V1,
  ...SUPPORTED_MEMO_PROGRAM_ADDRESSES,
]);

export type PolicyContext = {
  /** Our wallet (base58). */
  readonly wallet: string;
  /** Our wallet's associated token account for the network's USDC mint. */
  readonly usdcAccount: string;
  readonly usdcMint: string;
  /**
   * `SOLANA_ALLOWED_DESTINATIONS` when set: token accounts a transfer may pay into (and, since an
   * operator may list wallets, the USDC associated token accounts of those addresses).
   */
  readonly allowedDestinations: ReadonlySet<string> | undefined;
};

type Ix = {
  readonly program: string;
  readonly accounts: readonly string[];
  readonly data: ReadonlyUint8Array;
};

export type DecodedTransaction = {
  readonly transaction: Transaction;
  readonly message: CompiledTransactionMessage;
};

// Decoders are built once: building one per call allocates a fresh tree of codecs every time.
const transactionDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

function wireBytes(base64: string): Uint8Array {
  const text = base64.trim();
  if (text.length === 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text) || text.length % 4 !== 0) {
    throw new Error('not base64');
  }
  const buffer = Buffer.from(text, 'base64');
  // A plain Uint8Array: slices of it are copies, not views into Node's shared Buffer pool.
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/**
 * Decodes base64 wire bytes into the transaction (message bytes and signature slots) without
 * decoding the message; throws on anything malformed.
 */
export function decodeWireEnvelope(base64: string): Transaction {
  return transactionDecoder.decode(wireBytes(base64));
}

/** Decodes base64 wire bytes and the compiled message they carry; throws on anything malformed. */
export function decodeWireTransaction(base64: string): DecodedTransaction {
  const bytes = wireBytes(base64);
  // Legacy and v0 transactions put the signatures first, behind a count that is one byte below 128
  // (a set top bit is the v1 message-first layout). Their signers are the message's first static
  // accounts, so the slots can be named from the decoded message: the kit's transaction decoder
  // would base58-encode every static account a second time (BigInt arithmetic, as much work as the
  // message decoding itself) to build the same map. The message itself is read by
  // compiled-message.ts (the kit's result, without its BigInt base58). Anything else goes through
  // the kit.
  const count = bytes[0];
  if (count !== undefined && count < 0x80 && bytes.length > 1 + 64 * count) {
    const messageBytes = bytes.slice(1 + 64 * count);
    const message = decodeLegacyOrV0Message(messageBytes);
    if (message) {
      const signers = message.staticAccounts.slice(0, message.header.numSignerAccounts);
      if (signers.length !== count) throw new Error('the signature count does not match the message');
      // Same map as the kit's decoder: in signer order, an all-zero slot is an absent signature.
      const signatures: Record<Address, SignatureBytes | null> = {};
      signers.forEach((signer, i) => {
        const slot = bytes.slice(1 + 64 * i, 1 + 64 * (i + 1));
        signatures[signer] = slot.every((b) => b === 0) ? null : (slot as SignatureBytes);
      });
      const transaction: Transaction = {
        messageBytes: messageBytes as ReadonlyUint8Array as TransactionMessageBytes,
        signatures: Object.freeze(signatures),
      };
      return { transaction, message };
    }
  }
  const transaction = transactionDecoder.decode(bytes);
  return { transaction, message: messageDecoder.decode(transaction.messageBytes) };
}

export type PolicyRefusal = Extract<PolicyVerdict, { ok: false }>;
const refuse = (instruction: number | null, reason: string): PolicyRefusal => ({
  ok: false,
  instruction,
  reason,
});
export const UNDECODABLE: PolicyRefusal = Object.freeze(refuse(null, 'the transaction cannot be decoded'));
const nameOf = (program: string) => KNOWN_NAMES[program] ?? program;
const u64 = (d: ReadonlyUint8Array, at: number) =>
  new DataView(d.buffer, d.byteOffset, d.byteLength).getBigUint64(at, true);
const u32 = (d: ReadonlyUint8Array, at: number) =>
  new DataView(d.buffer, d.byteOffset, d.byteLength).getUint32(at, true);

/** The EVM recipient as CCTP's `mint_recipient`: the 20-byte address left-padded to 32 bytes. */
export function evmMintRecipient(evmAddress: string): Uint8Array {
  if (!/^0x[0-9a-fA-F]{40}$/.test(evmAddress)) throw new Error('not an EVM address');
  const out = new Uint8Array(32);
  out.set(Buffer.from(evmAddress.slice(2), 'hex'), 12);
  return out;
}

function instructionsOf(message: CompiledTransactionMessage): Ix[] | string {
  const accounts = message.staticAccounts;
  const at = (i: number) => accounts[i];
  const raw: { program: number; accounts: readonly number[]; data: ReadonlyUint8Array }[] =
    message.version === 1
      ? message.instructionHeaders.map((h, i) => ({
          program: h.programAccountIndex,
          accounts: message.instructionPayloads[i]?.instructionAccountIndices ?? [],
          data: message.instructionPayloads[i]?.instructionData ?? new Uint8Array(),
        }))
      : message.instructions.map((ix) => ({
          program: ix.programAddressIndex,
          accounts: ix.accountIndices ?? [],
          data: ix.data ?? new Uint8Array(),
        }));
  if (message.version === 1 && raw.length !== message.numInstructions)
    return 'instruction count does not match';
  const out: Ix[] = [];
  for (const [n, ix] of raw.entries()) {
    const program = at(ix.program);
    const accountList = ix.accounts.map(at);
    if (program === undefined || accountList.some((a) => a === undefined)) {
      return `instruction ${n} refers to an account outside the transaction`;
    }
    out.push({ program, accounts: accountList as string[], data: ix.data });
  }
  return out;
}

/**
 * Checks a built Solana transaction against docs/promises.md, promise 3 before our key signs it. Pure:
 * no RPC (there is none to ask), so every rule is decided from the bytes alone, and anything it
 * cannot prove harmless is refused.
 */
export function checkTransaction(
  base64: string,
  expected: SolanaExpectation,
  ctx: PolicyContext,
): PolicyVerdict {
  let decoded: DecodedTransaction;
  try {
    decoded = decodeWireTransaction(base64);
  } catch {
    return UNDECODABLE;
  }
  return checkDecodedTransaction(decoded, expected, ctx);
}

/** {@link checkTransaction} on a transaction already decoded by {@link decodeWireTransaction}. */
export function checkDecodedTransaction(
  decoded: DecodedTransaction,
  expected: SolanaExpectation,
  ctx: PolicyContext,
): PolicyVerdict {
  const { message } = decoded;
  const unsigned = checkOurSignature(message, ctx);
  if (unsigned) return unsigned;
  const instructions = instructionsOf(message);
  if (typeof instructions === 'string') return refuse(null, instructions);
  if (instructions.length === 0) return refuse(null, 'the transaction has no instructions');
  const want: Wanted = {
    expected,
    recipient: evmMintRecipient(expected.recipient),
    domain: CCTP_DOMAIN[expected.to],
  };
  let total = 0n;
  for (const [i, ix] of instructions.entries()) {
    const seen = checkInstruction(ix, i, want, ctx);
    if ('ok' in seen) return seen;
    total += seen.pays;
  }
  if (total === 0n) return refuse(null, 'no instruction pays the requested amount from our USDC account');
  if (total > expected.amount) {
    return refuse(
      null,
      `the transaction moves ${total} base units of USDC, more than the requested ${expected.amount}`,
    );
  }
  return { ok: true };
}

/** The payment asked for, and its CCTP form (the mint recipient and destination domain). */
type Wanted = {
  readonly expected: SolanaExpectation;
  readonly recipient: Uint8Array;
  readonly domain: number;
};

/** What one instruction does with our USDC: a refusal, or how much it pays from our account. */
type Seen = PolicyRefusal | { readonly pays: bigint };

const PAYS_NOTHING: Seen = { pays: 0n };

/** Our key must sign, never as the fee payer; no lookup tables (their accounts are unknown offline). */
function checkOurSignature(
  message: CompiledTransactionMessage,
  ctx: PolicyContext,
): PolicyRefusal | undefined {
  const signerCount = message.header.numSignerAccounts;
  const signers = message.staticAccounts.slice(0, signerCount);
  const ourIndex = message.staticAccounts.indexOf(ctx.wallet as Address);
  if (ourIndex < 0 || ourIndex >= signerCount) return refuse(null, 'our key is not a required signer');
  // Fees (base and priority, i.e. any compute-unit price) are always debited from the fee payer,
  // the first static account; with our key anywhere else no compute-budget setting can charge us.
  if (ourIndex === 0 || signers[0] === ctx.wallet) return refuse(null, 'our key is the fee payer');
  if (message.version === 0 && (message.addressTableLookups?.length ?? 0) > 0) {
    // Accounts loaded from a table cannot be known without RPC: refuse rather than guess.
    return refuse(null, 'the transaction uses address lookup tables');
  }
  return undefined;
}

function checkInstruction(ix: Ix, i: number, want: Wanted, ctx: PolicyContext): Seen {
  const ours = ix.accounts.includes(ctx.wallet);
  if (!ALLOWED_PROGRAMS.has(ix.program)) return refuseProgram(ix, i, ours);
  if (TOKEN_MESSENGER_MINTERS.has(ix.program) && startsWith(ix.data, DEPOSIT_FOR_BURN_DISCRIMINATOR)) {
    return checkBurn(ix, i, want, ctx);
  }
  // Instructions not involving our key cannot use our signature; the service's own business.
  if (!ours) return PAYS_NOTHING;
  if (ix.program === TOKEN_PROGRAM_ADDRESS) return checkTokenPayment(ix, i, ctx);
  if (ix.program === ASSOCIATED_TOKEN_PROGRAM_ADDRESS) return checkAssociatedToken(ix, i, ctx);
  if (MEMO_PROGRAMS.has(ix.program)) return PAYS_NOTHING; // a memo only records text; signing it moves nothing
  // Compute Budget takes no accounts, and the MessageTransmitter is reached through the
  // TokenMessengerMinter: either with our key at top level is something we do not understand.
  return refuse(i, `a ${nameOf(ix.program)} instruction involving our key is not allowed`);
}

function refuseProgram(ix: Ix, i: number, ours: boolean): PolicyRefusal {
  if (ix.program === SYSTEM_PROGRAM_ADDRESS && ours)
    return refuse(i, 'a System instruction signed by our key (it could move SOL)');
  if (ix.program === TOKEN_2022_PROGRAM_ADDRESS)
    return refuse(
      i,
      'Token-2022 is not allowed (USDC is a classic Token mint; transfer hooks would run other programs)',
    );
  return refuse(i, `program ${nameOf(ix.program)} is not allowed`);
}

/**
 * A CCTP deposit_for_burn. Every burn is checked, ours or not: a burn in our payment's transaction
 * that sends elsewhere is the service redirecting the payment.
 */
function checkBurn(ix: Ix, i: number, want: Wanted, ctx: PolicyContext): Seen {
  if (ix.data.length < DEPOSIT_FOR_BURN_V1_LEN) return refuse(i, 'deposit_for_burn data is too short');
  const destinationDomain = u32(ix.data, 16);
  const mintRecipient = ix.data.subarray(20, 52);
  if (destinationDomain !== want.domain)
    return refuse(
      i,
      `CCTP burn to domain ${destinationDomain}, expected ${want.domain} (${want.expected.to})`,
    );
  if (!bytesEqual(mintRecipient, want.recipient))
    return refuse(
      i,
      `CCTP burn to mint_recipient ${hex(mintRecipient)}, expected ${want.expected.recipient}`,
    );
  if (!ix.accounts.includes(ctx.wallet)) return PAYS_NOTHING;
  // Accounts (V1 and V2 alike): 0 owner, 1 event_rent_payer, 2 sender_authority_pda, 3 burn_token_account.
  if (ix.accounts[0] !== ctx.wallet)
    return refuse(i, 'our key appears in a CCTP burn without being its owner');
  if (ix.accounts.indexOf(ctx.wallet, 1) >= 0)
    return refuse(i, 'our key pays the CCTP event account rent (it would move SOL)');
  if (ix.accounts[3] !== ctx.usdcAccount) return refuse(i, 'CCTP burn is not from our USDC token account');
  if (!ix.accounts.includes(ctx.usdcMint)) return refuse(i, 'CCTP burn of another mint than USDC');
  return { pays: u64(ix.data, 8) };
}

/** A Token instruction with our key: only a USDC Transfer or TransferChecked, ours as its authority. */
function checkTokenPayment(ix: Ix, i: number, ctx: PolicyContext): Seen {
  const kind = ix.data[0];
  const name = kind === undefined ? 'empty' : (TokenInstruction[kind] ?? `instruction ${kind}`);
  let source: string | undefined;
  let destination: string | undefined;
  let authority: string | undefined;
  if (kind === TokenInstruction.Transfer && ix.data.length === 9) {
    [source, destination, authority] = ix.accounts;
  } else if (kind === TokenInstruction.TransferChecked && ix.data.length === 10) {
    let mint: string | undefined;
    [source, mint, destination, authority] = ix.accounts;
    if (mint !== ctx.usdcMint)
      return refuse(i, `TransferChecked of another mint (${mint ?? 'none'}) than USDC`);
  } else {
    return refuse(
      i,
      `token ${name} involving our key is not allowed (only a USDC Transfer or TransferChecked)`,
    );
  }
  if (authority !== ctx.wallet || ix.accounts.indexOf(ctx.wallet) !== ix.accounts.lastIndexOf(ctx.wallet)) {
    return refuse(i, `token ${name} uses our key other than as the transfer authority`);
  }
  if (source !== ctx.usdcAccount) return refuse(i, `token ${name} is not from our USDC token account`);
  if (destination === undefined) return refuse(i, `token ${name} has no destination`);
  if (ctx.allowedDestinations && !ctx.allowedDestinations.has(destination))
    return refuse(i, `token ${name} pays ${destination}, which is not in SOLANA_ALLOWED_DESTINATIONS`);
  return { pays: u64(ix.data, 1) };
}

/**
 * Creating an associated token account for our wallet is harmless as long as someone else funds
 * it: accounts are 0 payer, 1 the new account, 2 the wallet, 3 mint, 4 system, 5 token.
 */
function checkAssociatedToken(ix: Ix, i: number, ctx: PolicyContext): Seen {
  const kind = ix.data.length === 0 ? 0 : ix.data[0];
  if (
    (kind === 0 || kind === 1) &&
    ix.data.length <= 1 &&
    ix.accounts[2] === ctx.wallet &&
    ix.accounts.indexOf(ctx.wallet) === 2
  )
    return PAYS_NOTHING;
  return refuse(i, 'an Associated Token instruction that our key funds or authorises');
}

function startsWith(data: ReadonlyUint8Array, prefix: Uint8Array): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}
function bytesEqual(a: ReadonlyUint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
function hex(bytes: ReadonlyUint8Array): string {
  return `0x${Buffer.from(bytes).toString('hex')}`;
}
