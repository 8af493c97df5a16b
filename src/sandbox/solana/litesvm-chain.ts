import {
  address,
  appendTransactionMessageInstructions,
  createKeyPairFromPrivateKeyBytes,
  createSignerFromKeyPair,
  createTransactionMessage,
  getTransactionDecoder,
  isSolanaError,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type Transaction,
} from '@solana/kit';
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from '@solana-program/memo';
import {
  AccountState,
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstructionAsync,
  getMintEncoder,
  getMintSize,
  getMintToInstruction,
  getTokenDecoder,
  getTokenEncoder,
  getMintDecoder,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { LiteSVM } from 'litesvm';
import { encodeBase58 } from '../../domain/base58.ts';
import { SOLANA_USDC_MINT } from '../../domain/chains.ts';
import { splitRuntimeDump } from '../../domain/runtime-dump.ts';
import { USDC_DECIMALS } from '../../domain/money.ts';
import type { SandboxSolanaChain, SolanaSubmitOutcome } from '../chain-types.ts';
import { fundingAmount } from '../sandbox-config.ts';
import type { LiteSvmChainDeps, LiteSvmState } from './litesvm-state.ts';
import { handleSolanaRpc } from './solana-rpc.ts';

/** The fee payer's SOL: enough for every fee and account rent a sandbox run can pay. */
const FEE_PAYER_LAMPORTS = 100_000n * 1_000_000_000n;

/**
 * LiteSVM's transaction errors the service names (TransactionErrorFieldless in litesvm's typings:
 * a `const enum`, which erasable TypeScript cannot import).
 */
const TX_ERROR = {
  ProgramAccountNotFound: 3,
  InsufficientFundsForFee: 4,
  AlreadyProcessed: 6,
  BlockhashNotFound: 7,
  SignatureFailure: 11,
  InvalidProgramForExecution: 12,
} as const;
/** SPL Token's TokenError::InsufficientFunds. */
const TOKEN_INSUFFICIENT_FUNDS = 1;

/** LiteSVM in this process: the USDC mint (6 decimals) at the network's mint address, the fee payer funded, the deposit account. */
export async function startLiteSvmChain(deps: LiteSvmChainDeps): Promise<SandboxSolanaChain> {
  if (deps.network !== 'testnet') throw new Error('the real-chain sandbox runs testnet only');
  const keys = await createKeyPairFromPrivateKeyBytes(deps.feePayerSeed);
  const feePayer = await createSignerFromKeyPair(keys);
  const mint = address(SOLANA_USDC_MINT[deps.network]);
  const [deposit] = await findAssociatedTokenPda({
    owner: feePayer.address,
    mint,
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  const s: LiteSvmState = { deps, feePayer, mint, deposit, svm: new LiteSVM(), met: new Map(), counter: 0 };
  await genesis(s);
  return liteSvmApi(s);
}

function liteSvmApi(s: LiteSvmState): SandboxSolanaChain {
  return {
    kind: 'litesvm',
    feePayer: s.feePayer.address,
    depositAccount: s.deposit,
    blockhash: () => s.svm.latestBlockhash(),
    signAsFeePayer: async (message) => await signBytes(s.feePayer.keyPair.privateKey, message),
    execute: async (wire) => execute(s, wire),
    pay: async (owner, amount) => {
      if (!s.met.has(owner)) s.met.set(owner, Promise.resolve());
      return await mintTo(s, address(owner), amount);
    },
    balanceOf: async (owner) => tokenBalance(s, await usdcAccountOf(s, address(owner))),
    lamports: async (a) => s.svm.getBalance(address(a)) ?? 0n,
    setBalance: async (owner, amount) => setBalance(s, address(owner), amount),
    setFrozen: async (owner, on) => setFrozen(s, address(owner), on),
    meet: async (owner) => meet(s, address(owner)),
    rpc: async (body) => handleSolanaRpc(s, body),
    reset: async () => {
      s.svm = new LiteSVM();
      s.met = new Map();
      await genesis(s);
    },
    close: async () => {},
  };
}

/** The start-up state: the fee payer's SOL, the USDC mint (authority: the fee payer), the deposit account. */
async function genesis(s: LiteSvmState): Promise<void> {
  const funded = s.svm.airdrop(s.feePayer.address, lamports(FEE_PAYER_LAMPORTS));
  if (!funded || 'err' in funded) throw new Error(`LiteSVM did not fund the fee payer: ${String(funded)}`);
  const data = getMintEncoder().encode({
    mintAuthority: s.feePayer.address,
    supply: 0n,
    decimals: USDC_DECIMALS,
    isInitialized: true,
    freezeAuthority: null,
  });
  s.svm.setAccount({
    address: s.mint,
    data: Uint8Array.from(data),
    executable: false,
    lamports: lamports(s.svm.minimumBalanceForRentExemption(BigInt(getMintSize()))),
    programAddress: TOKEN_PROGRAM_ADDRESS,
    space: BigInt(getMintSize()),
  });
  await mintTo(s, s.feePayer.address, 0n);
}

const usdcAccountOf = async (s: Pick<LiteSvmState, 'mint'>, owner: Address) =>
  (await findAssociatedTokenPda({ owner, mint: s.mint, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];

/** Creates `owner`'s USDC account when missing (the fee payer pays the rent) and mints `amount` into it. */
async function mintTo(s: LiteSvmState, owner: Address, amount: bigint): Promise<string> {
  const token = await usdcAccountOf(s, owner);
  const instructions: Instruction[] = [
    await getCreateAssociatedTokenIdempotentInstructionAsync({ payer: s.feePayer, owner, mint: s.mint }),
  ];
  if (amount > 0n)
    instructions.push(getMintToInstruction({ mint: s.mint, token, mintAuthority: s.feePayer, amount }));
  instructions.push(
    getAddMemoInstruction(
      { memo: `usdc-batch sandbox ${++s.counter}` },
      { programAddress: LEGACY_MEMO_PROGRAM_ADDRESS_V3 },
    ),
  );
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(s.feePayer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: s.svm.latestBlockhash(), lastValidBlockHeight: 0n },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await signTransactionMessageWithSigners(message);
  const outcome = sendToRuntime(s, tx);
  if (!outcome.ok) throw new Error(`LiteSVM refused the sandbox's own mint: ${outcome.message}`);
  return outcome.signature;
}

/**
 * Funds `owner` the first time the sandbox meets it. A second meet while that funding is under way
 * waits for it: a transaction built for the owner must never reach the runtime before the owner's
 * USDC account exists (it would fail InvalidAccountData, as three rows of a batch once did).
 */
async function meet(s: LiteSvmState, owner: Address): Promise<void> {
  const met = s.met.get(owner);
  if (met) return await met;
  const funding = mintTo(s, owner, fundingAmount(s.deps.config())).then(() => undefined);
  s.met.set(owner, funding);
  await funding;
}

function tokenBalance(s: LiteSvmState, token: Address): bigint {
  const account = s.svm.getAccount(token);
  if (!account.exists || account.programAddress !== TOKEN_PROGRAM_ADDRESS) return 0n;
  return getTokenDecoder().decode(account.data).amount;
}

async function setBalance(s: LiteSvmState, owner: Address, amount: bigint): Promise<void> {
  await s.met.get(owner);
  s.met.set(owner, Promise.resolve());
  const token = await usdcAccountOf(s, owner);
  const current = tokenBalance(s, token);
  if (amount >= current) {
    await mintTo(s, owner, amount - current);
    return;
  }
  // Lowering a balance would need the owner's signature (a burn): for a drill the sandbox rewrites
  // the account and the mint's supply instead.
  const account = s.svm.getAccount(token);
  const mintAccount = s.svm.getAccount(s.mint);
  if (!account.exists || !mintAccount.exists) return;
  const decoded = getTokenDecoder().decode(account.data);
  s.svm.setAccount({ ...account, data: Uint8Array.from(getTokenEncoder().encode({ ...decoded, amount })) });
  const mint = getMintDecoder().decode(mintAccount.data);
  s.svm.setAccount({
    ...mintAccount,
    data: Uint8Array.from(getMintEncoder().encode({ ...mint, supply: mint.supply - (current - amount) })),
  });
}

/**
 * Freezes or thaws `owner`'s USDC account as USDC's freeze authority would: the account's state is
 * rewritten (`Frozen` or `Initialized`), so that a transfer or mint into it fails and
 * `getAccountInfo` shows it. An owner without an account gets an empty one first.
 */
async function setFrozen(s: LiteSvmState, owner: Address, on: boolean): Promise<string> {
  await s.met.get(owner);
  s.met.set(owner, Promise.resolve());
  const token = await usdcAccountOf(s, owner);
  if (!s.svm.getAccount(token).exists) await mintTo(s, owner, 0n);
  const account = s.svm.getAccount(token);
  if (!account.exists) throw new Error(`LiteSVM has no USDC account ${token} for ${owner}`);
  const decoded = getTokenDecoder().decode(account.data);
  const state = on ? AccountState.Frozen : AccountState.Initialized;
  s.svm.setAccount({ ...account, data: Uint8Array.from(getTokenEncoder().encode({ ...decoded, state })) });
  return token;
}

/** A fully signed wire transaction, executed by LiteSVM: its verdict as the service's answer. */
function execute(s: LiteSvmState, wire: Uint8Array): SolanaSubmitOutcome {
  let tx: Transaction;
  try {
    tx = getTransactionDecoder().decode(wire) as Transaction;
  } catch {
    return {
      ok: false,
      code: 'invalid_transaction',
      message: 'signed_transaction is not a Solana transaction',
    };
  }
  return sendToRuntime(s, tx);
}

function sendToRuntime(s: LiteSvmState, tx: Transaction): SolanaSubmitOutcome {
  let result: ReturnType<LiteSVM['sendTransaction']>;
  try {
    result = s.svm.sendTransaction(tx as Parameters<LiteSVM['sendTransaction']>[0]);
  } catch (err) {
    // litesvm's JS wrapper throws (kit's assertIsFullySignedTransaction) instead of answering.
    if (isSolanaError(err))
      return {
        ok: false,
        code: 'missing_signature',
        message: 'the transaction is not signed by every signer it names',
      };
    throw err;
  }
  if ('err' in result) return refusalOf(result);
  return { ok: true, signature: encodeBase58(result.signature()) };
}

function refusalOf(failed: {
  err(): unknown;
  toString(): string;
  meta(): { logs(): string[] };
}): SolanaSubmitOutcome {
  const e = failed.err();
  const detail = runtimeReason(failed);
  const fail = (code: string, message: string): SolanaSubmitOutcome => ({ ok: false, code, message });
  switch (e) {
    case TX_ERROR.AlreadyProcessed:
      return fail('already_processed', 'the runtime refused the transaction: already processed (a replay)');
    case TX_ERROR.BlockhashNotFound:
      return fail('blockhash_not_found', 'the runtime refused the transaction: its blockhash has expired');
    case TX_ERROR.SignatureFailure:
      return fail('invalid_signature', 'the runtime refused the transaction: a signature is not valid');
    case TX_ERROR.InsufficientFundsForFee:
      return fail('insufficient_fee', 'the fee payer cannot pay the fee');
    case TX_ERROR.ProgramAccountNotFound:
    case TX_ERROR.InvalidProgramForExecution:
      return fail('program_not_found', `the transaction calls a program LiteSVM does not have: ${detail}`);
    default:
      break;
  }
  if (
    typeof e === 'object' &&
    e !== null &&
    'err' in e &&
    typeof (e as { err: unknown }).err === 'function'
  ) {
    const inner = (e as { err(): unknown }).err();
    if (
      typeof inner === 'object' &&
      inner !== null &&
      (inner as { code?: unknown }).code === TOKEN_INSUFFICIENT_FUNDS
    )
      return fail(
        'insufficient_balance',
        'the wallet’s USDC balance is too low (SPL Token: insufficient funds)',
      );
  }
  return fail('transaction_failed', `the runtime refused the transaction: ${detail}`);
}

/**
 * What the runtime refused, in words: the error's name (`InvalidProgramForExecution`,
 * `InstructionError(0, Custom(1))`) and the last line the programs logged — never the runtime's
 * debug dump of the whole transaction, which a message cut to a few hundred characters would end
 * in the middle of.
 */
export function runtimeReason(failed: { toString(): string; meta(): { logs(): string[] } }): string {
  const split = splitRuntimeDump(failed.toString());
  const name = split.dump === undefined ? split.text.slice(0, 120) : split.text;
  let logs: string[] = [];
  try {
    logs = failed.meta().logs();
  } catch {
    logs = [];
  }
  const last = logs[logs.length - 1];
  return last ? `${name} (last program log: ${last.slice(0, 160)})` : name;
}
