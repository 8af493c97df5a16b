import type { FaultKind, FaultOp, SandboxConfig } from './sandbox-config.ts';
import { FAULT_KINDS } from './sandbox-config.ts';

/** mulberry32: a tiny seeded PRNG, so a run with fault probabilities can be replayed exactly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The fault for one request: the first scripted entry for this operation (consumed), else one
 * roll of the dice per fault kind in a fixed order. Returns the remaining script too.
 */
export function pickFault(
  config: SandboxConfig,
  op: FaultOp,
  random: () => number,
): { fault: FaultKind | undefined; script: SandboxConfig['faultScript'] } {
  const i = config.faultScript.findIndex((e) => e.op === op || e.op === '*');
  if (i >= 0) {
    const script = [...config.faultScript.slice(0, i), ...config.faultScript.slice(i + 1)];
    return { fault: config.faultScript[i]?.fault, script };
  }
  const odds = config.faults[op];
  if (odds) {
    for (const kind of FAULT_KINDS) {
      const p = odds[kind];
      if (p !== undefined && p > 0 && random() < p) return { fault: kind, script: config.faultScript };
    }
  }
  return { fault: undefined, script: config.faultScript };
}
