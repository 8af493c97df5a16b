import type { Hex } from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';

/** One message of a burn, as the sandbox's attestation service knows it. */
export type CctpMessageRecord = {
  readonly sourceDomain: number;
  readonly txHash: Hex;
  readonly logIndex: number;
  /** The message as the source chain emitted it (nonce and finality executed zero). */
  readonly sent: Hex;
  readonly nonce: Hex;
  /** Once signed: the attested message and its attestation (signed again on reattest). */
  attested: { message: Hex; attestation: Hex; expirationBlock: bigint } | null;
  /** The first signing while it runs: two workers asking at once get the one attestation. */
  signing: Promise<void> | null;
};

/** What the attestation API (`/cctp`) holds between requests. */
export type CctpState = {
  /** The attester every chain's MessageTransmitterV2 trusts; its key never leaves this process. */
  readonly attester: PrivateKeyAccount;
  readonly feeRecipient: Hex;
  /** When each burn (`<domain>:<tx hash>`) was first asked about: its 404, pending and complete times count from it. */
  firstAsked: Map<string, number>;
  /** Every message seen, by `<domain>:<tx hash>:<log index>`. */
  messages: Map<string, CctpMessageRecord>;
  /** The same records by nonce (lower-case hex). */
  byNonce: Map<string, CctpMessageRecord>;
  /** Base units of Fast attestations signed (the Fast allowance used). */
  fastUsed: bigint;
  /** Request times of the last second (the rate limit), and until when every request is refused. */
  recent: number[];
  blockedUntil: number;
};

export function createCctpState(attester: PrivateKeyAccount, feeRecipient: Hex): CctpState {
  return {
    attester,
    feeRecipient,
    firstAsked: new Map(),
    messages: new Map(),
    byNonce: new Map(),
    fastUsed: 0n,
    recent: [],
    blockedUntil: 0,
  };
}

/** Forgets every burn seen and the rate limiter (the sandbox's reset). */
export function clearCctpState(c: CctpState): void {
  c.firstAsked = new Map();
  c.messages = new Map();
  c.byNonce = new Map();
  c.fastUsed = 0n;
  c.recent = [];
  c.blockedUntil = 0;
}
