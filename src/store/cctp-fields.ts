/*
 * The CCTP road's saved steps of a transfer record (docs/data-model.md "Transfer record", docs/cctp.md
 * "The flow"): which burn call is the transfer's (its generation: a new one only when the chain
 * shows the earlier can never execute), the burn's maxFee, the burn's transaction, and after it the
 * message's nonce, the attestation's state and the mint. Short values only (hashes without `0x`),
 * so a finished record stays compact.
 */

export type CctpAttestation = 'pending' | 'complete' | 'expired';

/** The CCTP fields of a transfer; all null on the service road and before each step. */
export type CctpFacts = {
  /** The burn call's generation (`<batch>/<transfer>:burn:<gen>`); null before a burn was begun. */
  readonly burnGen: number | null;
  /** The burn's `maxFee` (USDC base units), decided before it was signed. */
  readonly maxFee: bigint | null;
  /** The burn's transaction (its latest version while unmined). */
  readonly burnTx: string | null;
  /** The attested message's nonce (bytes32). */
  readonly nonce: string | null;
  readonly attestation: CctpAttestation | null;
  /** The mint's transaction, once mined (ours), or seen minted by anyone. */
  readonly mintTx: string | null;
  /** The mint call's generation: a new mint call only after one was mined reverted or replaced. */
  readonly mintGen: number | null;
  /**
   * The approval being made before the burn (USDC base units): what the owner's queued transfers
   * need, decided once before the approve is signed (so a resumed run steps the same call); cleared
   * when the burn is begun.
   */
  readonly approval: bigint | null;
};

/** A write of some of them; `null` clears one. */
export type CctpPatch = { readonly [K in keyof CctpFacts]?: CctpFacts[K] };

const FIELD: { readonly [K in keyof CctpFacts]-?: string } = {
  burnGen: 'cctp_burn_gen',
  maxFee: 'cctp_max_fee',
  burnTx: 'cctp_burn_tx',
  nonce: 'cctp_nonce',
  attestation: 'cctp_att',
  mintTx: 'cctp_mint_tx',
  mintGen: 'cctp_mint_gen',
  approval: 'cctp_approval',
};

const isHex32 = (v: string) => /^[0-9a-fA-F]{64}$/.test(v);
const short = (v: string) => v.replace(/^0x(?=[0-9a-fA-F]{64}$)/, '');
const hex = (v: string | undefined) => (v === undefined || v === '' ? null : isHex32(v) ? `0x${v}` : v);
const int = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v));

/** The stored fields of a patch (`''` clears). */
export function cctpFields(p: CctpPatch): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(p) as [keyof CctpFacts, unknown][]) {
    if (v === undefined) continue;
    out[FIELD[k]] = v === null ? '' : typeof v === 'string' ? short(v) : String(v);
  }
  return out;
}

/** The CCTP fields of a stored record. */
export function cctpFactsOf(raw: Readonly<Record<string, string | undefined>>): CctpFacts {
  const att = raw[FIELD.attestation];
  const fee = raw[FIELD.maxFee];
  const approval = raw[FIELD.approval];
  return {
    burnGen: int(raw[FIELD.burnGen]),
    maxFee: fee !== undefined && /^[0-9]+$/.test(fee) ? BigInt(fee) : null,
    burnTx: hex(raw[FIELD.burnTx]),
    nonce: hex(raw[FIELD.nonce]),
    attestation: att === 'pending' || att === 'complete' || att === 'expired' ? att : null,
    mintTx: hex(raw[FIELD.mintTx]),
    mintGen: int(raw[FIELD.mintGen]),
    approval: approval !== undefined && /^[0-9]+$/.test(approval) ? BigInt(approval) : null,
  };
}

/** The record fields of the CCTP facts (a reader of other transfers' records, cctp-allowance-need.ts). */
export const CCTP_FIELDS = FIELD;
