import { CHAINS, isValidRoute, type Chain } from '../domain/chains.ts';
import { errorMessage } from '../domain/errors.ts';
import { bpsOf, formatUsdc } from '../domain/money.ts';
import type { ChainTarget, RebalancePolicy } from './policy.ts';

/**
 * The rebalancing plan (docs/rebalancing.md): a pure function of the chains' positions,
 * the policy and a fee estimator. Needs are served largest first, each from the chain with the most
 * to give (several donors where one is not enough); a move's amount is solved on the estimator's
 * answers so that its estimated `net_receive` covers what it serves, the fee on top from the donor,
 * and no donor is ever taken below its target.
 */

/** One chain's money, micro-USDC. `position = balance − outgoing + incoming`. */
export type ChainPosition = {
  readonly chain: Chain;
  readonly balance: bigint;
  readonly incoming: bigint;
  readonly outgoing: bigint;
  readonly position: bigint;
};

export type MoveEstimate = { readonly fee: bigint; readonly netReceive: bigint };

/** The service's estimate of a transfer of `amount` from `from` to `to` (may throw). */
export type FeeEstimator = (from: Chain, to: Chain, amount: bigint) => Promise<MoveEstimate>;

export type PlannedMove = {
  /** `rb-<FROM>-<TO>` */
  readonly id: string;
  readonly from: Chain;
  readonly to: Chain;
  readonly amount: bigint;
  /** The estimate's total fee. */
  readonly fee: bigint;
  readonly netReceive: bigint;
  readonly recipient: string;
};

export type SkippedMove = {
  readonly from: Chain;
  readonly to: Chain;
  readonly amount: bigint;
  readonly reason: string;
};

export type ChainState = 'below_min' | 'ok' | 'spare';

export type ChainPlan = ChainPosition & {
  readonly min: bigint | null;
  readonly target: bigint;
  /** The position once every planned move has landed (net in, amount out). */
  readonly after: bigint;
  readonly state: ChainState;
};

export type Plan = {
  readonly chains: readonly ChainPlan[];
  readonly moves: readonly PlannedMove[];
  readonly skipped: readonly SkippedMove[];
  /** Chains with a `min` whose `after` stays below their target, by how much. */
  readonly short: readonly { readonly chain: Chain; readonly missing: bigint }[];
};

export type PlanInput = {
  readonly policy: Pick<RebalancePolicy, 'chains' | 'minMove' | 'maxTotal'>;
  /** The policy's max_fee_bps, else MAX_FEE_BPS. */
  readonly maxFeeBps: bigint;
  /** Every chain of the policy. */
  readonly positions: readonly ChainPosition[];
  /** The treasury's receiving address on each chain of the policy. */
  readonly recipients: Readonly<Partial<Record<Chain, string>>>;
  readonly estimate: FeeEstimator;
};

/** Rounds of re-estimating a move's amount before it is given up on (the fee follows the amount). */
const SOLVE_ROUNDS = 12;

const chainOrder = (c: Chain) => CHAINS.indexOf(c);

/** A chain's state on its position now. */
export function chainState(t: Pick<ChainTarget, 'min' | 'target'>, position: bigint): ChainState {
  if (t.min !== null && position < t.min) return 'below_min';
  return position > t.target ? 'spare' : 'ok';
}

/**
 * The smallest amount (found by re-estimating: the fee depends on the amount) whose estimated net
 * covers `net`, or the answer for `cap` when even that does not. Estimates are asked once per amount.
 */
async function solveAmount(
  estimate: (amount: bigint) => Promise<MoveEstimate>,
  net: bigint,
  cap: bigint,
): Promise<{ amount: bigint; est: MoveEstimate } | undefined> {
  let amount = net < cap ? net : cap;
  for (let round = 0; round < SOLVE_ROUNDS; round++) {
    const est = await estimate(amount);
    if (est.netReceive >= net || amount === cap) return { amount, est };
    const next = amount + (net - est.netReceive);
    amount = next > cap ? cap : next;
  }
  return undefined;
}

/** Plans the moves. Deterministic: the same positions, policy and estimates give the same plan. */
export async function planRebalance(input: PlanInput): Promise<Plan> {
  const targets = new Map(input.policy.chains.map((c) => [c.chain, c]));
  const positions = [...input.positions]
    .filter((p) => targets.has(p.chain))
    .sort((a, b) => chainOrder(a.chain) - chainOrder(b.chain));
  const cache = new Map<string, Promise<MoveEstimate>>();
  const estimate = (from: Chain, to: Chain) => (amount: bigint) => {
    const key = `${from}/${to}/${amount}`;
    let p = cache.get(key);
    if (!p) cache.set(key, (p = input.estimate(from, to, amount)));
    return p;
  };

  const give = new Map<Chain, bigint>();
  const needs: { chain: Chain; need: bigint }[] = [];
  for (const p of positions) {
    const t = targets.get(p.chain) as ChainTarget;
    if (p.position > t.target) give.set(p.chain, p.position - t.target);
    if (t.min !== null && p.position < t.min) needs.push({ chain: p.chain, need: t.target - p.position });
  }
  needs.sort((a, b) =>
    a.need === b.need ? chainOrder(a.chain) - chainOrder(b.chain) : a.need > b.need ? -1 : 1,
  );

  prefetch(needs, give, estimate);

  const moves: PlannedMove[] = [];
  const skipped: SkippedMove[] = [];
  let total = 0n;
  for (const { chain: to, need } of needs) {
    let remaining = need;
    const tried = new Set<Chain>();
    while (remaining > 0n) {
      const donor = richestDonor(give, tried, to);
      if (donor === undefined) break;
      tried.add(donor);
      const available = give.get(donor) as bigint;
      let solved: Awaited<ReturnType<typeof solveAmount>>;
      try {
        solved = await solveAmount(estimate(donor, to), remaining, available);
      } catch (err) {
        skipped.push({
          from: donor,
          to,
          amount: remaining,
          reason: `fee estimate failed: ${errorMessage(err)}`,
        });
        continue;
      }
      if (solved === undefined) {
        skipped.push({
          from: donor,
          to,
          amount: remaining,
          reason: 'no amount found whose estimated net covers the need',
        });
        continue;
      }
      const { amount, est } = solved;
      const reason = skipReason(input, amount, est, total);
      if (reason !== undefined) {
        skipped.push({ from: donor, to, amount, reason });
        continue;
      }
      moves.push({
        id: `rb-${donor}-${to}`,
        from: donor,
        to,
        amount,
        fee: est.fee,
        netReceive: est.netReceive,
        recipient: input.recipients[to] ?? '',
      });
      total += amount;
      give.set(donor, available - amount);
      remaining -= est.netReceive < remaining ? est.netReceive : remaining;
    }
  }

  return { ...chainsAfter(input.policy.chains, positions, moves), moves, skipped };
}

/**
 * Each chain of the policy with its state and its position once `moves` have landed (none: the
 * positions as they are, what `--check` shows), and the chains that stay short of their target.
 */
export function chainsAfter(
  targets: readonly ChainTarget[],
  positions: readonly ChainPosition[],
  moves: readonly PlannedMove[] = [],
): Pick<Plan, 'chains' | 'short'> {
  const byChain = new Map(targets.map((c) => [c.chain, c]));
  const chains = positions
    .filter((p) => byChain.has(p.chain))
    .sort((a, b) => chainOrder(a.chain) - chainOrder(b.chain))
    .map((p): ChainPlan => {
      const t = byChain.get(p.chain) as ChainTarget;
      const out = moves.filter((m) => m.from === p.chain).reduce((s, m) => s + m.amount, 0n);
      const inn = moves.filter((m) => m.to === p.chain).reduce((s, m) => s + m.netReceive, 0n);
      return {
        chain: p.chain,
        balance: p.balance,
        incoming: p.incoming,
        outgoing: p.outgoing,
        position: p.position,
        min: t.min,
        target: t.target,
        after: p.position - out + inn,
        state: chainState(t, p.position),
      };
    });
  const short = chains
    .filter((c) => c.min !== null && c.after < c.target)
    .map((c) => ({ chain: c.chain, missing: c.target - c.after }));
  return { chains, short };
}

/**
 * Asks, all at once, the first estimate each (donor, need) pair will want (the amount a solve starts
 * from), so that a plan costs about one round trip per move rather than one per call. The answers
 * land in the planner's cache; a failure is seen when the planner reads it.
 */
function prefetch(
  needs: readonly { chain: Chain; need: bigint }[],
  give: ReadonlyMap<Chain, bigint>,
  estimate: (from: Chain, to: Chain) => (amount: bigint) => Promise<MoveEstimate>,
): void {
  for (const { chain: to, need } of needs) {
    for (const [from, g] of give) {
      if (from === to || g <= 0n || !isValidRoute(from, to)) continue;
      estimate(from, to)(need < g ? need : g).catch(() => {});
    }
  }
}

/** The donor with the most left to give (first in chain order on a tie), not yet tried for this need. */
function richestDonor(
  give: ReadonlyMap<Chain, bigint>,
  tried: ReadonlySet<Chain>,
  to: Chain,
): Chain | undefined {
  let best: Chain | undefined;
  let most = 0n;
  for (const chain of CHAINS) {
    const g = give.get(chain) ?? 0n;
    if (chain === to || tried.has(chain) || g <= 0n || !isValidRoute(chain, to)) continue;
    if (g > most) {
      best = chain;
      most = g;
    }
  }
  return best;
}

function skipReason(input: PlanInput, amount: bigint, est: MoveEstimate, total: bigint): string | undefined {
  if (amount < input.policy.minMove)
    return `amount ${formatUsdc(amount)} is under min_move (${formatUsdc(input.policy.minMove)})`;
  const bps = bpsOf(est.fee, amount);
  if (bps > input.maxFeeBps)
    return `estimated fee ${formatUsdc(est.fee)} is ${bps} bps, above max_fee_bps (${input.maxFeeBps})`;
  const cap = input.policy.maxTotal;
  if (cap !== null && total + amount > cap)
    return `would take the run's total to ${formatUsdc(total + amount)}, past max_total (${formatUsdc(cap)})`;
  return undefined;
}

/**
 * The planner's estimator on the service client's `estimate`, or on a CCTP road's fee quoter
 * : the fee's total and the net.
 */
export function serviceEstimator(client: {
  estimate(req: { from: Chain; to: Chain; amount: bigint }): Promise<{
    readonly fee: { readonly total: bigint };
    readonly netReceive: bigint;
  }>;
}): FeeEstimator {
  return async (from, to, amount) => {
    const e = await client.estimate({ from, to, amount });
    return { fee: e.fee.total, netReceive: e.netReceive };
  };
}

/** The planner's estimator on a CCTP road's fee quoter (src/service/cctp-fee-quote.ts). */
export function quoteEstimator(
  quote: (
    from: Chain,
    to: Chain,
    amount: bigint,
  ) => Promise<{
    readonly fee: { readonly total: bigint };
    readonly netReceive: bigint;
  }>,
): FeeEstimator {
  return serviceEstimator({ estimate: ({ from, to, amount }) => quote(from, to, amount) });
}
