import { describe, expect, it } from 'vitest';
import {
  createKeyPairFromPrivateKeyBytes,
  getAddressFromPublicKey,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit';
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { CCTP_DOMAIN, CCTP_PROGRAMS } from '../../src/domain/chains.ts';
import {
  buildSandboxTransfer,
  CCTP_DEPOSIT_FOR_BURN_DISCRIMINATOR,
  evmRecipientBytes32,
  MALICIOUS_SOLANA_KINDS,
  SANDBOX_UNKNOWN_PROGRAM,
  TOKEN_2022_PROGRAM,
  type SolanaTxKind,
} from '../../src/sandbox/solana-transaction.ts';

/** The compiled v0 message, typed for the fields these tests read. */
type V0Message = {
  version: number;
  staticAccounts: string[];
  instructions: { programAddressIndex: number; accountIndices?: number[]; data?: Uint8Array }[];
  addressTableLookups?: unknown[];
};
const decodeMessage = (
  bytes: Parameters<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>[0],
) => getCompiledTransactionMessageDecoder().decode(bytes) as unknown as V0Message;

const RECIPIENT = '0x000000000000000000000000000000000000dEaD';

async function decoded(kind: SolanaTxKind) {
  const fp = await getAddressFromPublicKey(
    (await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(1))).publicKey,
  );
  const wallet = await getAddressFromPublicKey(
    (await createKeyPairFromPrivateKeyBytes(new Uint8Array(32).fill(2))).publicKey,
  );
  const built = await buildSandboxTransfer({
    kind,
    network: 'testnet',
    feePayer: fp,
    wallet,
    amount: 7_000_000n,
    to: 'BASE',
    recipient: RECIPIENT,
  });
  const tx = getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64'));
  const msg = decodeMessage(tx.messageBytes);
  const programs = msg.instructions.map((i) => msg.staticAccounts[i.programAddressIndex]);
  return { fp, wallet, built, tx, msg, programs };
}

describe('buildSandboxTransfer (for the signing policy tests)', () => {
  it('builds the legitimate payment: compute budget, a USDC TransferChecked of the amount, a memo', async () => {
    const { fp, msg, programs, tx } = await decoded('legit');
    expect(msg.staticAccounts[0]).toBe(fp);
    expect(programs).toEqual([
      'ComputeBudget111111111111111111111111111111',
      'ComputeBudget111111111111111111111111111111',
      TOKEN_PROGRAM_ADDRESS,
      'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
    ]);
    const data = msg.instructions[2]?.data as Uint8Array;
    expect(data[0]).toBe(12); // TransferChecked
    expect(Buffer.from(data.slice(1, 9)).readBigUInt64LE()).toBe(7_000_000n);
    expect(data[9]).toBe(6);
    expect(Object.values(tx.signatures).every((s) => s === null)).toBe(true);
  });

  for (const [kind, version] of [
    ['cctp_v1', 1],
    ['cctp_v2', 2],
  ] as const) {
    it(`builds a legitimate CCTP ${kind} deposit_for_burn with the documented data layout`, async () => {
      const { msg, programs } = await decoded(kind);
      const i = programs.indexOf(
        version === 1 ? CCTP_PROGRAMS.tokenMessengerMinterV1 : CCTP_PROGRAMS.tokenMessengerMinterV2,
      );
      const data = Buffer.from(msg.instructions[i]?.data as Uint8Array);
      expect([...data.subarray(0, 8)]).toEqual([...CCTP_DEPOSIT_FOR_BURN_DISCRIMINATOR]);
      expect(data.readBigUInt64LE(8)).toBe(7_000_000n);
      expect(data.readUInt32LE(16)).toBe(CCTP_DOMAIN.BASE);
      expect([...data.subarray(20, 52)]).toEqual([...evmRecipientBytes32(RECIPIENT)]);
      expect(data.length).toBe(version === 1 ? 52 : 96);
    });
  }

  it('builds every malicious kind with its one defect', async () => {
    for (const kind of MALICIOUS_SOLANA_KINDS) {
      const { wallet, msg, programs } = await decoded(kind);
      const data = (name: string) => msg.instructions[programs.indexOf(name)]?.data as Uint8Array;
      switch (kind) {
        case 'sol_transfer':
          expect(programs).toContain('11111111111111111111111111111111');
          break;
        case 'inflated_amount':
          expect(Buffer.from(data(TOKEN_PROGRAM_ADDRESS).slice(1, 9)).readBigUInt64LE()).toBe(8_000_000n);
          break;
        case 'extra_transfer':
          expect(programs.filter((p) => p === TOKEN_PROGRAM_ADDRESS)).toHaveLength(2);
          break;
        case 'approve_delegate':
        case 'close_account':
        case 'set_authority': {
          const tags = msg.instructions
            .filter((_, i) => programs[i] === TOKEN_PROGRAM_ADDRESS)
            .map((ix) => ix.data?.[0]);
          expect(tags).toContain({ approve_delegate: 4, close_account: 9, set_authority: 6 }[kind]);
          break;
        }
        case 'wallet_fee_payer':
          expect(msg.staticAccounts[0]).toBe(wallet);
          break;
        case 'unknown_program':
          expect(programs).toContain(SANDBOX_UNKNOWN_PROGRAM);
          break;
        case 'token2022_transfer':
          expect(programs).toContain(TOKEN_2022_PROGRAM);
          expect(programs).not.toContain(TOKEN_PROGRAM_ADDRESS);
          break;
        case 'other_mint':
          expect(msg.staticAccounts).not.toContain('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU');
          break;
        case 'address_lookup_table':
          expect(msg.addressTableLookups).toHaveLength(1);
          break;
        case 'cctp_other_recipient':
          expect([...data(CCTP_PROGRAMS.tokenMessengerMinterV1).slice(20, 52)]).not.toEqual([
            ...evmRecipientBytes32(RECIPIENT),
          ]);
          break;
        case 'cctp_other_domain':
          expect(Buffer.from(data(CCTP_PROGRAMS.tokenMessengerMinterV1)).readUInt32LE(16)).not.toBe(
            CCTP_DOMAIN.BASE,
          );
          break;
      }
    }
  });
});
