import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { CHAINS, type Chain } from '../domain/chains.ts';
import { ValidationError } from '../domain/errors.ts';
import { tryParseUsdc } from '../domain/money.ts';

/**
 * A treasury rebalancing policy (README "Treasury rebalancing"): how much USDC each chain should
 * hold. Parsed at the edge from YAML (or the same as JSON); every problem is reported at once, each
 * naming its key (`chains.ARB.min: must not exceed target`). Amounts are exact micro-USDC.
 */
export type ChainTarget = {
  readonly chain: Chain;
  /** micro-USDC; null: the chain is never topped up (all above its target is spare). */
  readonly min: bigint | null;
  /** micro-USDC */
  readonly target: bigint;
};

export type RebalancePolicy = {
  readonly name: string;
  /** The chains taking part, in the service's chain order (ETH, BASE, ARB, POLYGON, SOLANA). */
  readonly chains: readonly ChainTarget[];
  /** micro-USDC; no move smaller than this. */
  readonly minMove: bigint;
  /** A move whose estimated fee is above this many basis points is left out; null: MAX_FEE_BPS. */
  readonly maxFeeBps: bigint | null;
  /** micro-USDC; null: no cap on what one run moves. */
  readonly maxTotal: bigint | null;
};

export type PolicyParse =
  | { readonly ok: true; readonly policy: RebalancePolicy }
  | { readonly ok: false; readonly problems: readonly string[] };

export const POLICY_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,40}$/;
const DEFAULT_MIN_MOVE = 1_000_000n;

/** An amount in USDC: a decimal string or a number, exact at 6 decimals, ≥ 0. */
const amount = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const text = typeof v === 'number' ? numberText(v) : v.trim();
  const r = text === undefined ? undefined : tryParseUsdc(text, { allowZero: true });
  if (r?.ok) return r.value;
  ctx.addIssue({
    code: 'custom',
    message: `must be an amount in USDC (e.g. 5000 or "12.50")${r && !r.ok ? `: it ${r.reason}` : ''}`,
  });
  return z.NEVER;
});

/** A number as plain decimal text, or undefined when it has no exact plain form (1e21, NaN, -1). */
function numberText(n: number): string | undefined {
  if (!Number.isFinite(n) || n < 0) return undefined;
  const text = String(n);
  return /e/i.test(text) ? undefined : text;
}

const chainSchema = z.strictObject({ min: amount.optional(), target: amount }).superRefine((c, ctx) => {
  if (c.min !== undefined && c.min > c.target)
    ctx.addIssue({ code: 'custom', path: ['min'], message: 'must not exceed target' });
});

const chainsSchema = z.strictObject(
  Object.fromEntries(CHAINS.map((c) => [c, chainSchema.optional()])) as Record<
    Chain,
    z.ZodOptional<typeof chainSchema>
  >,
);

const policySchema = z.strictObject({
  name: z.string().regex(POLICY_NAME_PATTERN, 'must be 1-40 of A-Z a-z 0-9 _ . -').optional(),
  chains: chainsSchema,
  min_move: amount.optional(),
  max_fee_bps: z.number().int('must be a whole number').min(0).max(10_000).optional(),
  max_total: amount.optional(),
});

/** The key path of an issue, as the policy file spells it: `chains.ARB.min`. */
function pathText(path: readonly PropertyKey[]): string {
  return path.map(String).join('.') || '(file)';
}

function issueProblems(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const inChains = issue.path.length === 1 && issue.path[0] === 'chains';
      return issue.keys.map(
        (key) =>
          `${pathText([...issue.path, key])}: ${inChains ? `unknown chain (one of ${CHAINS.join(', ')})` : 'unknown key'}`,
      );
    }
    if (issue.code === 'invalid_type' && issue.input === undefined)
      return [`${pathText(issue.path)}: is required`];
    return [`${pathText(issue.path)}: ${issue.message}`];
  });
}

/** The policy's default name: the file name without its extension. */
export function defaultPolicyName(file: string): string {
  return basename(file, extname(file));
}

/**
 * Parses a policy file's text. `file` gives the default name and the syntax (`.json` is read as
 * JSON; anything else as YAML, of which JSON is a subset).
 */
export function parsePolicy(text: string, file: string): PolicyParse {
  let data: unknown;
  if (extname(file).toLowerCase() === '.json') {
    try {
      data = JSON.parse(text);
    } catch (err) {
      return { ok: false, problems: [`(file): not valid JSON: ${(err as Error).message}`] };
    }
  } else {
    const doc = parseDocument(text, { uniqueKeys: true });
    if (doc.errors.length > 0) {
      return {
        ok: false,
        problems: doc.errors.map((e) => `(file): not valid YAML: ${e.message.split('\n')[0] ?? ''}`),
      };
    }
    data = doc.toJS();
  }
  const parsed = policySchema.safeParse(data ?? {});
  if (!parsed.success) return { ok: false, problems: issueProblems(parsed.error.issues) };
  const problems: string[] = [];
  const p = parsed.data;
  const chains: ChainTarget[] = [];
  for (const chain of CHAINS) {
    const c = p.chains[chain];
    if (!c) continue;
    chains.push({ chain, min: c.min ?? null, target: c.target });
  }
  if (chains.length === 0) problems.push('chains: must name at least one chain');
  const name = p.name ?? defaultPolicyName(file);
  if (p.name === undefined && !POLICY_NAME_PATTERN.test(name)) {
    problems.push(
      `name: the file name "${name.slice(0, 60)}" is not a policy name; set name (1-40 of A-Z a-z 0-9 _ . -)`,
    );
  }
  if (p.min_move !== undefined && p.min_move === 0n) problems.push('min_move: must be greater than 0');
  if (p.max_total !== undefined && p.max_total === 0n) problems.push('max_total: must be greater than 0');
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    policy: {
      name,
      chains,
      minMove: p.min_move ?? DEFAULT_MIN_MOVE,
      maxFeeBps: p.max_fee_bps === undefined ? null : BigInt(p.max_fee_bps),
      maxTotal: p.max_total ?? null,
    },
  };
}

/** A policy file read from disk: its text and the parsed policy. Any problem is a usage error (exit 2) listing them all. */
export function readPolicyFile(file: string | undefined): { text: string; policy: RebalancePolicy } {
  if (!file)
    throw new ValidationError(
      'USDC_USAGE_POLICY_MISSING',
      'a rebalancing policy file is needed (POLICY.yaml)',
    );
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ValidationError(
      'USDC_USAGE_POLICY_FILE',
      `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const parsed = parsePolicy(text, file);
  if (!parsed.ok) {
    throw new ValidationError(
      'USDC_USAGE_POLICY_INVALID',
      `policy ${file} has ${parsed.problems.length} problem(s):\n${parsed.problems.map((p) => `  ${p}`).join('\n')}`,
    );
  }
  return { text, policy: parsed.policy };
}
