import { createHash } from 'node:crypto';
import {
  address as toAddress,
  getBase64EncodedWireTransaction,
  type ReadonlyUint8Array,
  type SignatureBytes,
  type Transaction,
} from '@solana/kit';
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import type { Config } from '../../config/config.ts';
import { SOLANA_USDC_MINT } from '../../domain/chains.ts';
import type { Logger } from '../../log/logger.ts';
import { SigningError, SIGNING_ERROR_CODES } from '../errors.ts';
import { importEd25519Keypair, signEd25519, type Ed25519Key } from './ed25519-key.ts';
import type { PolicyVerdict, SolanaExpectation, SolanaSigner, TransferRef } from '../types.ts';
import {
  checkDecodedTransaction,
  decodeWireEnvelope,
  decodeWireTransaction,
  type DecodedTransaction,
  type PolicyContext,
  type PolicyRefusal,
  UNDECODABLE,
} from './transaction-policy.ts';

export type SolanaSignerDeps = {
  readonly config: Pick<Config, 'solanaSecretKey' | 'network' | 'solanaAllowedDestinations'>;
  readonly logger?: Logger;
};

/** The associated token account of `wallet` for `mint` (classic Token program). */
export async function usdcTokenAccount(wallet: string, mint: string): Promise<string> {
  const [ata] = await findAssociatedTokenPda({
    owner: toAddress(wallet),
    mint: toAddress(mint),
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  return ata;
}

// Approvals are remembered by message hash so that `sign` signs only what `check` passed; bounded,
// since a worker runs for days.
const MAX_APPROVED = 10_000;
// The transactions `check` passed most recently, decoded, by their exact wire text: the pipeline
// signs the very string it just checked, and decoding it again (the kit base58-encodes every account
// key with BigInt arithmetic) was a large share of the worker's CPU. Only a shortcut: on a miss
// `sign` decodes the text and looks its message hash up in the approvals, as before.
const MAX_RECENT = 256;

/** Adds `key` as the newest entry and drops the oldest ones beyond `max`. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}

/** A signer's state: its key, the policy bound to our wallet, and what `check` approved. */
type Signer = {
  readonly key: Ed25519Key;
  readonly wallet: string;
  readonly policy: PolicyContext;
  readonly logger: Logger | undefined;
  /** Message hashes `check` passed. */
  readonly approved: Map<string, true>;
  /** The transactions `check` passed most recently, decoded, by their exact wire text. */
  readonly recent: Map<string, { readonly transaction: Transaction; readonly digest: string }>;
};

/**
 * Our Solana keypair (solana-keygen layout: secret ‖ public), the transaction policy bound to our
 * wallet and USDC account, and partial signing. Async because the associated token account
 * derivation (SHA-256 PDAs) is. The secret never leaves its KeyObject (ed25519-key.ts).
 */
export async function createSolanaSigner(deps: SolanaSignerDeps): Promise<
  SolanaSigner & {
    /** Our USDC associated token account. */
    readonly usdcAccount: string;
  }
> {
  const key = importKey(deps.config.solanaSecretKey);
  const wallet = key.address;
  const policy = await policyContext(wallet, deps.config);
  const signer: Signer = {
    key,
    wallet,
    policy,
    logger: deps.logger,
    approved: new Map(),
    recent: new Map(),
  };
  return {
    address: wallet,
    usdcAccount: policy.usdcAccount,
    check: (transactionBase64, expected, about) => checkTx(signer, transactionBase64, expected, about),
    sign: (transactionBase64) => signTx(signer, transactionBase64),
  };
}

function importKey(bytes: Config['solanaSecretKey']): Ed25519Key {
  if (bytes === undefined) {
    throw new SigningError(
      SIGNING_ERROR_CODES.solanaKeyMissing,
      'No Solana key: set SOLANA_KEYPAIR_FILE or SOLANA_PRIVATE_KEY to sign Solana-source transfers',
    );
  }
  try {
    // Also checks that the public half matches the secret.
    return importEd25519Keypair(bytes);
  } catch {
    throw new SigningError(
      SIGNING_ERROR_CODES.solanaKeyInvalid,
      'The Solana key is not a valid keypair (64 bytes: secret key then its public key)',
    );
  }
}

/** The policy bound to our wallet: its USDC account, the mint, the allowed destinations (and theirs). */
async function policyContext(wallet: string, config: SolanaSignerDeps['config']): Promise<PolicyContext> {
  const usdcMint = SOLANA_USDC_MINT[config.network];
  const usdcAccount = await usdcTokenAccount(wallet, usdcMint);
  let allowedDestinations: Set<string> | undefined;
  if (config.solanaAllowedDestinations) {
    allowedDestinations = new Set(config.solanaAllowedDestinations);
    for (const d of config.solanaAllowedDestinations)
      allowedDestinations.add(await usdcTokenAccount(d, usdcMint));
  }
  return { wallet, usdcAccount, usdcMint, allowedDestinations };
}

/** The message bytes as the plain Uint8Array node:crypto takes (a view, not a copy). */
const bytesOf = (messageBytes: ReadonlyUint8Array): Uint8Array =>
  new Uint8Array(messageBytes.buffer, messageBytes.byteOffset, messageBytes.byteLength);

function digest(messageBytes: ReadonlyUint8Array): string {
  return createHash('sha256').update(bytesOf(messageBytes)).digest('hex');
}

function refused(
  s: Signer,
  verdict: PolicyRefusal,
  expected: SolanaExpectation,
  about?: TransferRef,
): PolicyRefusal {
  s.logger?.warn(
    { ...about, instruction: verdict.instruction, reason: verdict.reason, to: expected.to },
    'refused to sign a Solana transaction',
  );
  return verdict;
}

/** The policy check; a transaction it passes is remembered (by message hash) as one `sign` may sign. */
function checkTx(
  s: Signer,
  transactionBase64: string,
  expected: SolanaExpectation,
  about?: TransferRef,
): PolicyVerdict {
  let decoded: DecodedTransaction;
  try {
    decoded = decodeWireTransaction(transactionBase64);
  } catch {
    return refused(s, UNDECODABLE, expected, about);
  }
  const verdict = checkDecodedTransaction(decoded, expected, s.policy);
  if (!verdict.ok) return refused(s, verdict, expected, about);
  const hash = digest(decoded.transaction.messageBytes);
  remember(s.approved, hash, true, MAX_APPROVED);
  remember(s.recent, transactionBase64, { transaction: decoded.transaction, digest: hash }, MAX_RECENT);
  return verdict;
}

/** The transaction `check` passed with its message hash: the recent one, or decoded again. */
function checkedEnvelope(s: Signer, transactionBase64: string): { transaction: Transaction; hash: string } {
  const known = s.recent.get(transactionBase64);
  if (known) {
    // The same text decodes to the same bytes, whose message `check` passed.
    s.recent.delete(transactionBase64);
    return { transaction: known.transaction, hash: known.digest };
  }
  let transaction: Transaction;
  try {
    // Only the envelope: the approval is by message hash, so the message need not be decoded.
    transaction = decodeWireEnvelope(transactionBase64);
  } catch (cause) {
    throw new SigningError(SIGNING_ERROR_CODES.solanaTxInvalid, 'The Solana transaction cannot be decoded', {
      cause,
    });
  }
  return { transaction, hash: digest(transaction.messageBytes) };
}

/** Our partial signature on a transaction `check` passed in this process; anything else is refused. */
async function signTx(s: Signer, transactionBase64: string): Promise<string> {
  const { transaction, hash } = checkedEnvelope(s, transactionBase64);
  // Defence in depth: the policy is the only gate before our signature, so a transaction whose
  // exact message bytes did not pass `check` in this process is never signed.
  if (!s.approved.has(hash)) {
    throw new SigningError(
      SIGNING_ERROR_CODES.solanaTxInvalid,
      'Refusing to sign a Solana transaction that was not checked by the policy first',
    );
  }
  if (!(s.wallet in transaction.signatures)) {
    throw new SigningError(
      SIGNING_ERROR_CODES.solanaNotSigner,
      'Our key is not a signer of this transaction',
    );
  }
  return getBase64EncodedWireTransaction(withOurSignature(s, transaction));
}

/** The transaction with our slot filled, every signature already present kept, in their order. */
function withOurSignature(s: Signer, transaction: Transaction): Transaction {
  const ours = signEd25519(s.key, bytesOf(transaction.messageBytes)) as SignatureBytes;
  return { ...transaction, signatures: Object.freeze({ ...transaction.signatures, [s.wallet]: ours }) };
}
