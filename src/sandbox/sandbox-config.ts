import { z } from 'zod';
import { CHAINS, type Chain } from '../domain/chains.ts';
import { tryParseUsdc } from '../domain/money.ts';
import { SOLANA_TX_KINDS, type SolanaTxKind } from './solana-transaction.ts';

/** Faults the sandbox can inject into one request. */
export const FAULT_KINDS = [
  /** answer `failBeforeStatus` (503) without acting */
  'fail_before',
  /** act, then answer `failAfterStatus` (500): the payment happened, the answer says otherwise */
  'fail_after',
  /** answer 429 with `Retry-After: retryAfterSeconds`, without acting */
  'rate_limit',
  /** answer nothing (`hangMs` null) or act and answer after `hangMs` */
  'hang',
  /** destroy the connection before acting */
  'reset_before',
  /** act, then destroy the connection without answering */
  'reset_after',
  /** act, then answer 200 with truncated JSON */
  'broken_body',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The operations faults target (`rpc` is every JSON-RPC call, `plants` the sample route, `cctp` every route of the attestation API). */
const FAULT_OPS = ['estimate', 'transfer', 'build_tx', 'submit', 'status', 'rpc', 'plants', 'cctp'] as const;
export type FaultOp = (typeof FAULT_OPS)[number];

/** The sandbox's knobs: constructor options, or `POST /__admin/config` at run time (JSON as below). */
export type SandboxConfig = {
  /** Added before every answer (not admin). Default 0. */
  readonly latencyMs: number;
  /** Seed of the fault dice, so a run with probabilities is reproducible. Default 1. */
  readonly seed: number;
  /** Probability (0..1) of each fault per operation, e.g. `{ transfer: { fail_after: 0.2 } }`. */
  readonly faults: Readonly<Partial<Record<FaultOp, Readonly<Partial<Record<FaultKind, number>>>>>>;
  /** Faults for the next matching requests, consumed in order (before the dice). */
  readonly faultScript: readonly { readonly op: FaultOp | '*'; readonly fault: FaultKind }[];
  readonly failBeforeStatus: number;
  readonly failAfterStatus: number;
  readonly retryAfterSeconds: number;
  /** For `hang`: null never answers (until close); a number acts and answers after that delay. */
  readonly hangMs: number | null;
  /** Replay the stored answer of an `Idempotency-Key` already seen (true), or ignore the header (false). Default true. */
  readonly idempotencyReplay: boolean;
  /** What build-tx hands out: `legit` (default), `cctp_v1`, `cctp_v2`, or a malicious kind. */
  readonly solanaTxKind: SolanaTxKind;
  /** Lifetime of a built transaction. Default 120 000 (2 min). */
  readonly solanaExpiryMs: number;
  /** Time per status step pending → detected → minted → complete. Default 2 000. */
  readonly statusStepMs: number;
  /** false: `GET /sdk/v1/status/*` answers 404 (a service without the route). Default true. */
  readonly statusRoute: boolean;
  /**
   * How far `/rpc/<CHAIN>` is behind the chain the service executes on: a node that answers from
   * the newest block mined at least this long ago (its block number, headers and `eth_call` state
   * all lag together). Default 0.
   */
  readonly rpcNonceLagMs: number;
  /**
   * USDC the sandbox gives every EVM owner and Solana wallet the first time it meets it (a permit,
   * a `balanceOf` read over `/rpc`, a build-tx), decimal. Default 1000000.
   */
  readonly treasuryBalance: string;
  /** Platform fee in basis points of the amount, rounded up. Default 10 (0.1 %). */
  readonly feeBps: number;
  /** Gas per chain, decimal USDC; a transfer pays its source's plus its destination's. */
  readonly gasFee: Readonly<Record<Chain, string>>;
  /**
   * Native gas (ETH, POL: decimal, 18 decimals) the sandbox gives every EVM address it meets that
   * holds less: owners pay their own transactions on the CCTP road. Default 10.
   */
  readonly nativeBalance: string;
  /** CCTP (docs/sandbox.md "CCTP v2"): `GET /cctp/v2/messages` answers 404 this long after it is first asked about a burn. Default 0. */
  readonly cctpNotFoundMs: number;
  /** Then `pending_confirmations` this long before a Standard burn (threshold 2000) is attested. Default 3 000. */
  readonly cctpStandardDelayMs: number;
  /** The same for a Fast burn (threshold ≤ 1000). Default 500. */
  readonly cctpFastDelayMs: number;
  /** Circle's fee quote in basis points, per finality (`GET /cctp/v2/burn/USDC/fees`). Defaults 0 and 1. */
  readonly cctpStandardFeeBps: number;
  readonly cctpFastFeeBps: number;
  /** An attestation expires this many destination blocks after it is signed; 0 never. Default 0. */
  readonly cctpExpiryBlocks: number;
  /** The next this many attestations are signed already expired (for a reattest drill); each one signed uses one. Default 0. */
  readonly cctpExpiredAttestations: number;
  /** Circle's Fast Transfer allowance, decimal USDC; each Fast attestation uses its amount. Default 10000000. */
  readonly cctpFastAllowance: string;
  /** Requests per second the attestation API takes before it answers 429 to everything (Circle: 35); null no limit. Default 35. */
  readonly cctpRateLimitPerSecond: number | null;
  /** How long it then answers 429 (Circle: 5 minutes). Default 300 000. */
  readonly cctpRateLimitBlockMs: number;
};

export const DEFAULT_SANDBOX_CONFIG: SandboxConfig = Object.freeze({
  latencyMs: 0,
  seed: 1,
  faults: {},
  faultScript: [],
  failBeforeStatus: 503,
  failAfterStatus: 500,
  retryAfterSeconds: 1,
  hangMs: null,
  idempotencyReplay: true,
  solanaTxKind: 'legit',
  solanaExpiryMs: 120_000,
  statusStepMs: 2_000,
  statusRoute: true,
  rpcNonceLagMs: 0,
  treasuryBalance: '1000000',
  feeBps: 10,
  gasFee: { ETH: '0.03', BASE: '0.005', ARB: '0.005', POLYGON: '0.005', SOLANA: '0.005' },
  nativeBalance: '10',
  cctpNotFoundMs: 0,
  cctpStandardDelayMs: 3_000,
  cctpFastDelayMs: 500,
  cctpStandardFeeBps: 0,
  cctpFastFeeBps: 1,
  cctpExpiryBlocks: 0,
  cctpExpiredAttestations: 0,
  cctpFastAllowance: '10000000',
  cctpRateLimitPerSecond: 35,
  cctpRateLimitBlockMs: 300_000,
});

const usdcText = z
  .string()
  .refine((s) => tryParseUsdc(s, { allowZero: true }).ok, 'must be a decimal USDC amount');
const faultOp = z.enum(FAULT_OPS);
const faultKind = z.enum(FAULT_KINDS);
const probability = z.number().min(0).max(1);

/** A patch of the config: every field optional, unknown fields refused. */
const sandboxConfigPatch = z
  .object({
    latencyMs: z.number().int().min(0).max(600_000),
    seed: z.number().int(),
    faults: z.partialRecord(faultOp, z.partialRecord(faultKind, probability)),
    faultScript: z.array(z.object({ op: z.union([faultOp, z.literal('*')]), fault: faultKind }).strict()),
    failBeforeStatus: z.number().int().min(400).max(599),
    failAfterStatus: z.number().int().min(400).max(599),
    retryAfterSeconds: z.number().int().min(0).max(3600),
    hangMs: z.number().int().min(0).max(3_600_000).nullable(),
    idempotencyReplay: z.boolean(),
    solanaTxKind: z.enum(SOLANA_TX_KINDS),
    solanaExpiryMs: z.number().int().min(0),
    statusStepMs: z.number().int().min(0),
    statusRoute: z.boolean(),
    rpcNonceLagMs: z.number().int().min(0),
    treasuryBalance: usdcText,
    feeBps: z.number().int().min(0).max(10_000),
    gasFee: z.partialRecord(z.enum(CHAINS), usdcText),
    nativeBalance: z.string().regex(/^\d{1,12}(\.\d{1,18})?$/, 'must be a decimal amount of native gas'),
    cctpNotFoundMs: z.number().int().min(0),
    cctpStandardDelayMs: z.number().int().min(0),
    cctpFastDelayMs: z.number().int().min(0),
    cctpStandardFeeBps: z.number().min(0).max(10_000),
    cctpFastFeeBps: z.number().min(0).max(10_000),
    cctpExpiryBlocks: z.number().int().min(0),
    cctpExpiredAttestations: z.number().int().min(0),
    cctpFastAllowance: usdcText,
    cctpRateLimitPerSecond: z.number().int().min(1).nullable(),
    cctpRateLimitBlockMs: z.number().int().min(0),
  })
  .partial()
  .strict();

export type SandboxConfigPatch = z.infer<typeof sandboxConfigPatch>;

/** Applies a validated patch; throws a readable Error listing every problem. */
export function applyConfigPatch(config: SandboxConfig, patch: unknown): SandboxConfig {
  const r = sandboxConfigPatch.safeParse(patch);
  if (!r.success) {
    throw new Error(r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  }
  const p = r.data;
  const next: Record<string, unknown> = { ...config };
  for (const [k, v] of Object.entries(p)) if (v !== undefined) next[k] = v;
  if (p.gasFee) next['gasFee'] = { ...config.gasFee, ...p.gasFee };
  return Object.freeze(next as SandboxConfig);
}

/** What the sandbox funds an owner or wallet with the first time it meets it (`treasuryBalance`), in base units. */
export function fundingAmount(config: SandboxConfig): bigint {
  const r = tryParseUsdc(config.treasuryBalance, { allowZero: true });
  return r.ok ? r.value : 0n;
}
