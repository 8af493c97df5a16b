import { describe, expect, it, beforeAll } from 'vitest';
import {
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import { SOLANA_USDC_MINT } from '../../src/domain/chains.ts';
import {
  LEGIT_SOLANA_KINDS,
  MALICIOUS_SOLANA_KINDS,
  buildSandboxTransfer,
} from '../../src/sandbox/solana-transaction.ts';
import { decodeWireTransaction } from '../../src/signing/solana/transaction-policy.ts';
import { ataOf, fixedSolanaKey, memo, transferChecked } from '../helpers/solana-tx.ts';

const MINT = SOLANA_USDC_MINT.testnet;
const BLOCKHASH = '4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM' as Blockhash;

let treasury: Awaited<ReturnType<typeof fixedSolanaKey>>;
let service: Awaited<ReturnType<typeof fixedSolanaKey>>;
let payment: Instruction;

beforeAll(async () => {
  treasury = await fixedSolanaKey('treasury');
  service = await fixedSolanaKey('service fee payer');
  payment = transferChecked({
    source: await ataOf(treasury.address, MINT),
    mint: MINT,
    destination: await ataOf(service.address, MINT),
    authority: treasury.address,
    amount: 1_000_000n,
  });
});

async function wire(version: 'legacy' | 0 | 1, presign: boolean): Promise<string> {
  const message = pipe(
    createTransactionMessage({ version }),
    (m) => setTransactionMessageFeePayer(service.address, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: BLOCKHASH, lastValidBlockHeight: 9n }, m),
    (m) => appendTransactionMessageInstructions([payment, memo('decode')], m),
  );
  let tx = compileTransaction(message);
  if (presign) tx = await partiallySignTransaction([service.keyPair], tx);
  return getBase64EncodedWireTransaction(tx);
}

/** What the kit's own decoders make of the same text, in plain arrays for comparison. */
function kitView(base64: string) {
  const transaction = getTransactionDecoder().decode(Uint8Array.from(Buffer.from(base64, 'base64')));
  return view({
    transaction,
    message: getCompiledTransactionMessageDecoder().decode(transaction.messageBytes),
  });
}
function view(d: ReturnType<typeof decodeWireTransaction>) {
  return {
    messageBytes: [...d.transaction.messageBytes],
    // Entries in order: the encoder writes the slots in the map's order.
    signatures: Object.entries(d.transaction.signatures).map(([k, v]) => [k, v && [...v]]),
    frozen: Object.isFrozen(d.transaction.signatures),
    message: JSON.stringify(d.message, (_k, v: unknown) =>
      v instanceof Uint8Array ? [...v] : typeof v === 'bigint' ? v.toString() : v,
    ),
  };
}

describe('Solana wire decoding for the policy', () => {
  it.each([
    ['legacy', false],
    ['legacy', true],
    [0, false],
    [0, true],
    [1, false],
    [1, true],
  ] as const)(
    'reads a %s transaction (fee payer signed: %s) exactly as the kit decoders do',
    async (version, presign) => {
      const text = await wire(version, presign);
      const ours = decodeWireTransaction(text);
      expect(view(ours)).toEqual(kitView(text));
      expect(ours.message.version).toBe(version);
      // Re-encoding gives back the very bytes: the signature slots are in the wire order.
      expect(getBase64EncodedWireTransaction(ours.transaction)).toBe(text);
      expect(ours.transaction.signatures[service.address] === null).toBe(!presign);
      expect(ours.transaction.signatures[treasury.address]).toBeNull();
    },
  );

  it('reads every sandbox transaction kind exactly as the kit decoders do', async () => {
    for (const kind of [...LEGIT_SOLANA_KINDS, ...MALICIOUS_SOLANA_KINDS]) {
      const { transaction } = await buildSandboxTransfer({
        kind,
        network: 'testnet',
        feePayer: service.address,
        wallet: treasury.address,
        amount: 2_000_000n,
        to: 'BASE',
        recipient: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
        blockhash: BLOCKHASH,
      });
      expect(view(decodeWireTransaction(transaction)), kind).toEqual(kitView(transaction));
    }
  });

  it('refuses bytes whose signature count disagrees with the message or that are cut short', async () => {
    const bytes = Buffer.from(await wire(0, true), 'base64');
    expect(bytes[0]).toBe(2);
    // One signature slot fewer than the message's two signers (the message stays whole).
    const fewer = Buffer.concat([Buffer.from([1]), bytes.subarray(1 + 64)]);
    expect(() => decodeWireTransaction(fewer.toString('base64'))).toThrow();
    expect(() => getTransactionDecoder().decode(fewer)).toThrow();
    const cut = bytes.subarray(0, bytes.length - 40);
    expect(() => decodeWireTransaction(cut.toString('base64'))).toThrow();
    expect(() => decodeWireTransaction(bytes.subarray(0, 100).toString('base64'))).toThrow();
    expect(() => decodeWireTransaction('AA==')).toThrow();
  });
});
