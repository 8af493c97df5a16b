import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { CHAINS, type Chain } from '../domain/chains.ts';
import { ValidationError } from '../domain/errors.ts';
import { tryParseUsdc } from '../domain/money.ts';
import { counted } from '../domain/plural.ts';
import { isTransferRoad, TRANSFER_ROADS, type TransferRoad } from '../domain/roads.ts';
import { keyPath, NumberText, readPolicyText, type PolicyMap, type PolicyValue } from './policy-text.ts';

/**
 * A treasury rebalancing policy (docs/rebalancing.md): how much USDC each chain should
 * hold. Parsed at the edge from YAML (or the same as JSON); every problem is reported at once, each
 * naming its key (`chains.ARB.min: must not exceed target`). Amounts are exact micro-USDC, read
 * from the text the file wrote (policy-text.ts), never through a float.
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
  /** The road of its moves (docs/cctp.md); null: TRANSFER_VIA. */
  readonly via: TransferRoad | null;
};

export type PolicyParse =
  | { readonly ok: true; readonly policy: RebalancePolicy }
  | { readonly ok: false; readonly problems: readonly string[] };

export const POLICY_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,40}$/;
const DEFAULT_MIN_MOVE = 1_000_000n;
const MAX_FEE_BPS = 10_000n;
const TOP_KEYS = ['name', 'chains', 'min_move', 'max_fee_bps', 'max_total', 'via'];
const CHAIN_KEYS = ['min', 'target'];
const AMOUNT = 'must be an amount in USDC (e.g. 5000 or "12.50")';
const BPS = 'must be a whole number of basis points from 0 to 10000 (30 is 0.3 %)';

/** How a value is named in a message: the text a number or a string was written as, or its kind. */
function shown(value: PolicyValue): string {
  if (value instanceof NumberText) return value.text.slice(0, 40);
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  if (value === null) return 'empty';
  if (typeof value === 'boolean') return String(value);
  return Array.isArray(value) ? 'a list' : 'a mapping';
}

/** The text of a number or a string: what an amount or a count is read from. */
function writtenText(value: PolicyValue): string | undefined {
  if (value instanceof NumberText) return value.text;
  return typeof value === 'string' ? value.trim() : undefined;
}

function isMapping(value: PolicyValue | undefined): value is PolicyMap {
  return value instanceof Map;
}

/** Reads the rules' values, each problem named by its key path. */
type Reader = { readonly problems: string[] };

/** An amount in USDC (a number as written, or a decimal string), exact at 6 decimals, ≥ 0. */
function readAmount(r: Reader, value: PolicyValue, path: string[]): bigint | undefined {
  const text = writtenText(value);
  if (text === undefined) {
    r.problems.push(`${keyPath(path)}: ${AMOUNT}, not ${shown(value)}`);
    return undefined;
  }
  const parsed = tryParseUsdc(text, { allowZero: true });
  if (parsed.ok) return parsed.value;
  r.problems.push(`${keyPath(path)}: ${AMOUNT}: ${text.slice(0, 40)} ${parsed.reason}`);
  return undefined;
}

/** `max_fee_bps`: a whole number of basis points, 0 to 10000. */
function readBps(r: Reader, value: PolicyValue): bigint | undefined {
  const text = writtenText(value);
  if (text === undefined || !/^[0-9]{1,30}$/.test(text)) {
    r.problems.push(`max_fee_bps: ${BPS}, not ${shown(value)}`);
    return undefined;
  }
  const bps = BigInt(text);
  if (bps <= MAX_FEE_BPS) return bps;
  r.problems.push(`max_fee_bps: must be at most 10000 (100 %), not ${shown(value)}`);
  return undefined;
}

function unknownKeys(
  r: Reader,
  map: PolicyMap,
  known: readonly string[],
  path: string[],
  what: string,
): void {
  for (const key of map.keys())
    if (!known.includes(key)) r.problems.push(`${keyPath([...path, key])}: ${what}`);
}

/** One chain's `{ min, target }`. */
function readChain(r: Reader, chain: Chain, value: PolicyValue): ChainTarget | undefined {
  const path = ['chains', chain];
  if (!isMapping(value)) {
    r.problems.push(`${keyPath(path)}: must be a mapping with target (and min), not ${shown(value)}`);
    return undefined;
  }
  unknownKeys(r, value, CHAIN_KEYS, path, 'unknown key');
  const minValue = value.get('min');
  const targetValue = value.get('target');
  const min = minValue === undefined ? null : readAmount(r, minValue, [...path, 'min']);
  if (targetValue === undefined) r.problems.push(`${keyPath([...path, 'target'])}: is required`);
  const target = targetValue === undefined ? undefined : readAmount(r, targetValue, [...path, 'target']);
  if (min === undefined || target === undefined) return undefined;
  if (min !== null && min > target) {
    r.problems.push(`${keyPath([...path, 'min'])}: must not exceed target`);
    return undefined;
  }
  return { chain, min, target };
}

/** `chains`: the chains taking part, in the service's chain order. */
function readChains(r: Reader, value: PolicyValue | undefined): ChainTarget[] {
  if (value === undefined) {
    r.problems.push('chains: is required');
    return [];
  }
  if (!isMapping(value)) {
    r.problems.push(
      `chains: must be a mapping of chains to { min, target } (e.g. BASE: { min: 5000, target: 20000 }), not ${shown(value)}`,
    );
    return [];
  }
  const byChain = chainsByCode(r, value);
  const chains: ChainTarget[] = [];
  for (const chain of CHAINS) {
    const c = byChain.get(chain);
    const read = c === undefined ? undefined : readChain(r, chain, c);
    if (read) chains.push(read);
  }
  if (value.size === 0) r.problems.push('chains: must name at least one chain');
  return chains;
}

/**
 * The `chains` mapping by chain code, whatever the letter case it was written in (`base` is BASE,
 * as in a CSV); a chain written twice (`base` and `BASE`) and an unknown one are problems.
 */
function chainsByCode(r: Reader, value: PolicyMap): Map<Chain, PolicyValue> {
  const byChain = new Map<Chain, PolicyValue>();
  const written = new Map<Chain, string>();
  for (const [key, v] of value) {
    const chain = CHAINS.find((c) => c === key.toUpperCase());
    if (chain === undefined) {
      r.problems.push(`${keyPath(['chains', key])}: unknown chain (one of ${CHAINS.join(', ')})`);
      continue;
    }
    const first = written.get(chain);
    if (first !== undefined) {
      r.problems.push(`chains.${chain}: is given twice (as ${first} and ${key})`);
      continue;
    }
    written.set(chain, key);
    byChain.set(chain, v);
  }
  return byChain;
}

function readName(r: Reader, value: PolicyValue | undefined, file: string): string {
  if (value === undefined) {
    const name = defaultPolicyName(file);
    if (!POLICY_NAME_PATTERN.test(name))
      r.problems.push(
        `name: the file name "${name.slice(0, 60)}" is not a policy name; set name (1-40 of A-Z a-z 0-9 _ . -)`,
      );
    return name;
  }
  const text = value instanceof NumberText ? value.text : value;
  if (typeof text === 'string' && POLICY_NAME_PATTERN.test(text)) return text;
  r.problems.push(`name: must be 1-40 of A-Z a-z 0-9 _ . -, not ${shown(value)}`);
  return '';
}

/** min_move and max_total: an amount greater than 0, when given. */
function readPositive(r: Reader, map: PolicyMap, key: string): bigint | undefined {
  const value = map.get(key);
  if (value === undefined) return undefined;
  const amount = readAmount(r, value, [key]);
  if (amount === 0n) r.problems.push(`${key}: must be greater than 0`);
  return amount;
}

/**
 * `via`: the road of the policy's moves. CCTP runs between EVM chains only, so a CCTP policy with
 * SOLANA among its chains is a problem here rather than a refused move at every run.
 */
function readVia(
  r: Reader,
  value: PolicyValue | undefined,
  chains: readonly ChainTarget[],
): TransferRoad | null {
  if (value === undefined || value === null) return null;
  const text = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (text === undefined || !isTransferRoad(text)) {
    r.problems.push(`via: must be one of ${TRANSFER_ROADS.join(', ')}, not ${shown(value)}`);
    return null;
  }
  if (text !== 'service' && chains.some((c) => c.chain === 'SOLANA'))
    r.problems.push(`via: ${text} runs between EVM chains only; chains.SOLANA needs via: service`);
  return text;
}

/** The policy's default name: the file name without its extension. */
export function defaultPolicyName(file: string): string {
  return basename(file, extname(file));
}

/**
 * Parses a policy file's text. `file` gives the default name and the syntax (`.json` is read as
 * JSON; anything else as YAML, of which JSON is a subset). Every problem is reported at once.
 */
export function parsePolicy(text: string, file: string): PolicyParse {
  const read = readPolicyText(text, extname(file).toLowerCase() === '.json');
  if (!read.ok) return { ok: false, problems: read.problems };
  const r: Reader = { problems: [...read.problems] };
  const root = read.value ?? new Map<string, PolicyValue>();
  if (!isMapping(root)) {
    return {
      ok: false,
      problems: [
        ...r.problems,
        `(file): must be a mapping of name, chains, min_move, max_fee_bps, max_total and via, not ${shown(root)}`,
      ],
    };
  }
  unknownKeys(r, root, TOP_KEYS, [], 'unknown key');
  const name = readName(r, root.get('name'), file);
  const chains = readChains(r, root.get('chains'));
  const minMove = readPositive(r, root, 'min_move');
  const maxTotal = readPositive(r, root, 'max_total');
  const bpsValue = root.get('max_fee_bps');
  const maxFeeBps = bpsValue === undefined ? null : readBps(r, bpsValue);
  const via = readVia(r, root.get('via'), chains);
  if (r.problems.length > 0) return { ok: false, problems: r.problems };
  return {
    ok: true,
    policy: {
      name,
      chains,
      minMove: minMove ?? DEFAULT_MIN_MOVE,
      maxFeeBps: maxFeeBps ?? null,
      maxTotal: maxTotal ?? null,
      via,
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
      `policy ${file} has ${counted(parsed.problems.length, 'problem')}:\n${parsed.problems.map((p) => `  ${p}`).join('\n')}`,
    );
  }
  return { text, policy: parsed.policy };
}
