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
  getAddressEncoder,
  getAddressFromPublicKey,
  getBase64EncodedWireTransaction,
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
import { getAddMemoInstruction } from '@solana-program/memo';
import {
  findAssociatedTokenPda,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { encodeBase58 } from '../../src/domain/base58.ts';

/** A deterministic Solana keypair from a label: its address and its 64-byte solana-keygen secret. */
export async function fixedSolanaKey(label: string): Promise<{
  address: Address;
  secret: Uint8Array;
  keyPair: Awaited<ReturnType<typeof createKeyPairFromPrivateKeyBytes>>;
}> {
  const seed = createHash('sha256').update(`usdc-batch test key: ${label}`).digest();
  const keyPair = await createKeyPairFromPrivateKeyBytes(seed);
  const addr = await getAddressFromPublicKey(keyPair.publicKey);
  const secret = new Uint8Array(64);
  secret.set(seed, 0);
  secret.set(getAddressEncoder().encode(addr), 32);
  return { address: addr, secret, keyPair };
}

/** A fixed address (not a key anyone holds) from a label. */
export function labelAddress(label: string): Address {
  return address(encodeBase58(createHash('sha256').update(`usdc-batch test address: ${label}`).digest()));
}

export async function ataOf(
  owner: string,
  mint: string,
  tokenProgram: string = TOKEN_PROGRAM_ADDRESS,
): Promise<Address> {
  const [ata] = await findAssociatedTokenPda({
    owner: address(owner),
    mint: address(mint),
    tokenProgram: address(tokenProgram),
  });
  return ata;
}

export function transferChecked(p: {
  source: string;
  mint: string;
  destination: string;
  authority: string;
  amount: bigint;
  programAddress?: string;
}): Instruction {
  return getTransferCheckedInstruction(
    {
      source: address(p.source),
      mint: address(p.mint),
      destination: address(p.destination),
      authority: createNoopSigner(address(p.authority)),
      amount: p.amount,
      decimals: 6,
    },
    p.programAddress ? { programAddress: address(p.programAddress) } : {},
  );
}

/** A classic SPL Token `Transfer` (discriminator 3, amount u64 LE): source, destination, authority. */
export function plainTransfer(p: {
  source: string;
  destination: string;
  authority: string;
  amount: bigint;
}): Instruction {
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, p.amount, true);
  return {
    programAddress: TOKEN_PROGRAM_ADDRESS,
    accounts: [
      { address: address(p.source), role: AccountRole.WRITABLE },
      { address: address(p.destination), role: AccountRole.WRITABLE },
      { address: address(p.authority), role: AccountRole.READONLY_SIGNER },
    ],
    data,
  };
}

/** `deposit_for_burn` data; V2 appends destination_caller (32), max_fee u64 and min_finality_threshold u32. */
export function depositForBurnData(p: {
  version: 1 | 2;
  amount: bigint;
  domain: number;
  evmRecipient: string;
}): Uint8Array {
  const out = new Uint8Array(p.version === 1 ? 52 : 96);
  const view = new DataView(out.buffer);
  out.set([215, 60, 61, 46, 114, 55, 128, 176], 0);
  view.setBigUint64(8, p.amount, true);
  view.setUint32(16, p.domain, true);
  out.set(Buffer.from(p.evmRecipient.slice(2), 'hex'), 20 + 12);
  if (p.version === 2) {
    view.setBigUint64(84, 5n, true);
    view.setUint32(92, 1000, true);
  }
  return out;
}

/**
 * A CCTP deposit_for_burn with Circle's account order (0 owner, 1 event_rent_payer, 2
 * sender_authority, 3 burn_token_account, …, the mint). Accounts we do not check are stand-ins.
 */
export function depositForBurn(p: {
  program: string;
  owner: string;
  rentPayer: string;
  eventData: string;
  source: string;
  mint: string;
  version: 1 | 2;
  amount: bigint;
  domain: number;
  evmRecipient: string;
}): Instruction {
  const ro = (a: string) => ({ address: address(a), role: AccountRole.READONLY });
  const w = (a: string) => ({ address: address(a), role: AccountRole.WRITABLE });
  const filler = (n: string) => ro(labelAddress(`cctp ${n}`));
  return {
    programAddress: address(p.program),
    accounts: [
      { address: address(p.owner), role: AccountRole.READONLY_SIGNER },
      { address: address(p.rentPayer), role: AccountRole.WRITABLE_SIGNER },
      filler('sender_authority'),
      w(p.source),
      ...(p.version === 2 ? [filler('denylist')] : []),
      filler('message_transmitter'),
      filler('token_messenger'),
      filler('remote_token_messenger'),
      filler('token_minter'),
      filler('local_token'),
      w(p.mint),
      { address: address(p.eventData), role: AccountRole.WRITABLE_SIGNER },
      ro(TOKEN_PROGRAM_ADDRESS),
    ],
    data: depositForBurnData(p),
  };
}

export const computeBudget = (): Instruction[] => [
  getSetComputeUnitLimitInstruction({ units: 200_000 }),
  getSetComputeUnitPriceInstruction({ microLamports: 5_000n }),
];
export const memo = (text: string): Instruction => getAddMemoInstruction({ memo: text });

/**
 * Compiles instructions into a base64 wire transaction (v0) with `feePayer`; signs with `preSigners`
 * (e.g. the service's fee payer) so tests can check that our signature keeps theirs.
 */
export async function buildTx(p: {
  feePayer: string;
  instructions: Instruction[];
  lookupTable?: { table: string; addresses: string[] };
  preSigners?: Awaited<ReturnType<typeof createKeyPairFromPrivateKeyBytes>>[];
}): Promise<string> {
  const blockhash = encodeBase58(createHash('sha256').update('blockhash').digest()) as Blockhash;
  let message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(p.feePayer), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash, lastValidBlockHeight: 100n }, m),
    (m) => appendTransactionMessageInstructions(p.instructions, m),
  );
  if (p.lookupTable) {
    message = compressTransactionMessageUsingAddressLookupTables(message, {
      [address(p.lookupTable.table)]: p.lookupTable.addresses.map((a) => address(a)),
    }) as typeof message;
  }
  let tx = compileTransaction(message);
  if (p.preSigners?.length) tx = await partiallySignTransaction(p.preSigners, tx);
  return getBase64EncodedWireTransaction(tx);
}
