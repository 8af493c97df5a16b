import type { TransferState } from '../domain/transfer.ts';
import { fieldsOf, runRecordAfter, type RunRecord, type StepsPatch } from './saved-steps.ts';
import { parseEvidence } from './transfer-evidence.ts';

/*
 * What each write of the transfer store leaves in the record a run carries (pipeline/context.ts
 * Ctx.run): the patch it wrote, and what the store itself stamps with it — `updated_at`, a send's
 * pending estimate (`est_pending`), a move's operation id and the estimate it takes into the fee
 * fields, a submitted record written anew without its empty fields. Each function mirrors its
 * script (transfer-store.ts names them), so that the carried record reads as the stored one would,
 * without reading it again (test/integration/pipeline-decisions.test.ts compares the two).
 */

/** A fee estimate as the store writes it (`<total>|<platform>|<gas>|<net receive>`). */
export type StoredEstimate = {
  readonly fee: { readonly total: bigint; readonly platform: bigint; readonly gas: bigint };
  readonly netReceive: bigint;
};

/** An estimate as fenced-save.lua stores it in `est_pending`. */
export function pendingEstimateOf(est: StoredEstimate): string {
  return [est.fee.total, est.fee.platform, est.fee.gas, est.netReceive].join('|');
}

/** A save of saved-step fields (saveSteps, fenced-save.lua): the patch, stamped `updated_at`. */
export function afterSave(
  carried: RunRecord,
  patch: StepsPatch,
  at: { readonly now: number; readonly estimate?: StoredEstimate | undefined },
  fields: Record<string, string> = fieldsOf(patch),
): RunRecord {
  const stored: Record<string, string> = { ...fields, updated_at: String(at.now) };
  if (at.estimate) stored['est_pending'] = pendingEstimateOf(at.estimate);
  return withUpdatedAt(runRecordAfter(carried, { patch }, stored), at.now);
}

/** An estimate saved alone (estimate-save.lua): the fee fields, a pending estimate replaced. */
export function afterEstimate(carried: RunRecord, est: StoredEstimate): RunRecord {
  const raw: Record<string, string> = {
    ...carried.raw,
    fee_total: est.fee.total.toString(),
    fee_platform: est.fee.platform.toString(),
    fee_gas: est.fee.gas.toString(),
    net_receive: est.netReceive.toString(),
  };
  delete raw['est_pending'];
  return {
    ...carried,
    feeTotal: est.fee.total,
    feePlatform: est.fee.platform,
    feeGas: est.fee.gas,
    netReceive: est.netReceive,
    raw,
  };
}

/** A line appended to the evidence (evidence-append.lua): the list as the script stored it. */
export function afterEvidence(carried: RunRecord, stored: string): RunRecord {
  const evidence = parseEvidence(stored);
  return {
    ...carried,
    evidence,
    steps: { ...carried.steps, evidence },
    raw: { ...carried.raw, evidence: stored },
  };
}

/**
 * A state change (transfer-move.lua, move-transfer.lua): the patch and the state, stamped
 * `updated_at` and the move's `op`; a pending estimate becomes the fee fields; a move to `submitted` writes the record anew, leaving out the fields held empty.
 */
export function afterMove(
  carried: RunRecord,
  move: {
    readonly to: TransferState;
    readonly patch: StepsPatch;
    readonly now: number;
    readonly op: string;
  },
): RunRecord {
  const fields = fieldsOf(move.patch);
  const stored: Record<string, string> = { ...fields, updated_at: String(move.now), op: move.op };
  // As applyPendingEstimate: a pending estimate goes; one that reads becomes the fee fields.
  if (carried.raw['est_pending']) stored['est_pending'] = '';
  const pending = /^([^|]+)\|([^|]+)\|([^|]+)\|([^|]+)$/.exec(carried.raw['est_pending'] ?? '');
  if (pending) {
    Object.assign(stored, {
      fee_total: pending[1],
      fee_platform: pending[2],
      fee_gas: pending[3],
      net_receive: pending[4],
    });
  }
  const after = withUpdatedAt(
    runRecordAfter(carried, { state: move.to, patch: move.patch }, stored),
    move.now,
  );
  if (move.to !== 'submitted') return after;
  const raw = Object.fromEntries(Object.entries(after.raw).filter(([, v]) => v !== ''));
  return { ...after, raw };
}

function withUpdatedAt(rec: RunRecord, now: number): RunRecord {
  return { ...rec, updatedAt: now };
}
