import type { Chain, EvmChain, Network } from '../domain/chains.ts';
import { clearCctpState, type CctpState } from './cctp-state.ts';
import type { SandboxEvmChain, SandboxSolanaChain } from './chain-types.ts';
import { seededRandom } from './faults.ts';
import type { SandboxConfig } from './sandbox-config.ts';
import type { SolanaTxKind } from './solana-transaction.ts';

/** One payment the sandbox executed. Amounts are micro-USDC decimal strings. */
export type LedgerEntry = {
  readonly kind: 'evm' | 'solana';
  readonly intent_id: string;
  readonly from: Chain;
  readonly to: Chain;
  readonly amount: string;
  /** What the recipient is paid on `to` (the amount less the fee). */
  readonly net_amount: string;
  readonly recipient: string;
  /** The permit owner (EVM) or `from_wallet` (Solana). */
  readonly owner: string;
  /** The permit nonce (EVM); null for Solana. */
  readonly nonce: string | null;
  readonly idempotency_key: string | null;
  /** EVM source: the transferFrom that moved the owner's USDC (the permit's own is `permit_tx_hash`). */
  readonly tx_hash: string | null;
  readonly permit_tx_hash: string | null;
  /** Solana source: the executed transaction's signature. */
  readonly tx_signature: string | null;
  /**
   * What the worker signed, as the service received it: the permit's `signature` (EVM), or the
   * `signed_transaction` (Solana, before the fee payer's signature). Tests look for it where it must
   * never be (job hashes, logs): the worker keeps it only until the transfer is submitted.
   */
  readonly signed_payload: string;
  /** Solana: the kind of transaction that was built and signed (a malicious one means the policy let it through). */
  readonly solana_tx_kind: SolanaTxKind | null;
  /** The payment to the recipient on `to` (EVM tx hash or Solana signature), once the intent reached `minted`. */
  destination_tx: string | null;
  /** When the service answered (executed, just before its reply), ms since the epoch. */
  readonly at: number;
  /**
   * When its request arrived, before the configured latency (ms since the epoch): `at` less this is
   * the service's own time for the call; the gap from one owner's `at` to its next `received_at` is
   * the worker's (the bench's owner cycle, BENCHMARKS.md section 7).
   */
  readonly received_at: number;
};

export type Reply = { status: number; body: unknown; headers?: Record<string, string> };

/** What a settled intent pays on its destination chain. */
export type Payout = { readonly to: Chain; readonly recipient: string; readonly amount: bigint };

type IntentBase = {
  id: string;
  at: number;
  forced: string | null;
  /** Set once the transfer executed on its source chain. */
  payout: Payout | null;
  ledger: LedgerEntry | null;
  /** The destination payment, once started (it runs once). */
  settling: Promise<void> | null;
};
export type Intent =
  | (IntentBase & { kind: 'evm' })
  | (IntentBase & {
      kind: 'solana';
      expiresAt: number;
      messageBytes: Uint8Array;
      fromWallet: string;
      to: EvmChain;
      amount: bigint;
      recipient: string;
      txKind: SolanaTxKind;
      /** Its execution: when, the answer, and the wire transaction that executed (base64). */
      submitted: { at: number; reply: Reply; wire: string } | null;
    });

/** Everything the service's operations and its admin routes share. */
export type ServiceState = {
  readonly network: Network;
  readonly apiKey: string;
  readonly plantsToken: string;
  readonly evm: Readonly<Record<EvmChain, SandboxEvmChain>>;
  readonly solana: SandboxSolanaChain;
  /** The relayer: every chain's permit spender. */
  readonly spender: string;
  readonly initialConfig: SandboxConfig;
  config: SandboxConfig;
  random: () => number;
  ledger: LedgerEntry[];
  requestLog: { op: string; at: number }[];
  intents: Map<string, Intent>;
  idempotency: Map<string, { fingerprint: string; reply: Reply }>;
  /** Requests under an `Idempotency-Key` still being processed: a second one waits for the first. */
  inFlight: Map<string, Promise<Reply>>;
  plants: Map<string, unknown>;
  /** Destination payments scheduled for when an intent reaches `minted`. */
  timers: Set<NodeJS.Timeout>;
  /** The CCTP attestation API's attester and the burns it has seen (`/cctp`). */
  readonly cctp: CctpState;
};

export function createServiceState(p: {
  network: Network;
  apiKey: string;
  plantsToken: string;
  evm: Readonly<Record<EvmChain, SandboxEvmChain>>;
  solana: SandboxSolanaChain;
  spender: string;
  config: SandboxConfig;
  cctp: CctpState;
}): ServiceState {
  return {
    ...p,
    initialConfig: p.config,
    random: seededRandom(p.config.seed),
    ledger: [],
    requestLog: [],
    intents: new Map(),
    idempotency: new Map(),
    inFlight: new Map(),
    plants: new Map(),
    timers: new Set(),
  };
}

/** Forgets every intent, payment record and idempotency answer; config back to the start. (Chains reset apart.) */
export function clearServiceState(s: ServiceState): void {
  for (const t of s.timers) clearTimeout(t);
  s.timers.clear();
  s.ledger = [];
  s.requestLog = [];
  s.intents = new Map();
  s.idempotency = new Map();
  s.inFlight = new Map();
  s.plants = new Map();
  clearCctpState(s.cctp);
  s.config = s.initialConfig;
  s.random = seededRandom(s.config.seed);
}

export const err = (status: number, code: string, message: string): Reply => ({
  status,
  body: { error: { code, message } },
});

export function str(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  return typeof v === 'string' ? v : undefined;
}
