import type { FailureKind } from '../service/types.ts';
import type { PipelinePolicy } from './policy.ts';

/*
 * What a failed send leads to: pure decisions, from facts the flows gather (the answer, the
 * payload's history, the clock) to what they do next. The writes they lead to are the flows'
 * (send-attempt.ts, evm/evm-flow.ts, solana-flow.ts); the rules are here, one table each, tested
 * without Redis, a chain or a service (test/unit/pipeline-failure-decision.test.ts).
 *
 * The money rule under all three: a payload that may have been processed (an ambiguous answer, a
 * send cut off mid-call) is never replaced; a refusal proves nothing about it any more, so it ends
 * `needs_review`. A payload every send of which was refused, or that the service never processed,
 * moved no money: it may be replaced, or the transfer fails.
 */

/** What is known after a send of a saved payload failed (the answer already recorded). */
export type SendFailureFacts = {
  readonly kind: FailureKind;
  /** The service's Retry-After on a 429 (ms). */
  readonly retryAfterMs?: number | undefined;
  /** An earlier send of this payload may have been processed (an ambiguous answer, a cut-off send). */
  readonly uncertainBefore: boolean;
  /** Ambiguous answers met by this payload, this one included (0 when this one is not ambiguous). */
  readonly ambiguousAnswers: number;
  /** `unavailable` answers met by this payload, this one included. */
  readonly unavailableAnswers: number;
  /** The transfer's transient budget (PipelinePolicy.transientDeadlineMs) is spent. */
  readonly pastDeadline: boolean;
  /**
   * The service refused the send's `Idempotency-Key` as used before with another payload
   * (`idempotency_key_reused`): a payload with this transfer's key reached it before.
   */
  readonly keyReused: boolean;
};

/** How long to pause before a re-send: exponential backoff at `attempt`, or a fixed wait. */
export type ResendPause = { readonly backoffAttempt: number } | { readonly ms: number };

/**
 * `resend` the same payload after a pause; `refused_first` every send was refused: it moved no
 * money (the flow settles the refusal); `give_up_unprocessed` the service never processed it;
 * `needs_review` a send may have been processed and no answer says how it ended; `key_reused` an
 * earlier payload of this transfer, one this project no longer remembers, reached the service under
 * this key (its memory was lost: a Redis emptied, or restored from an old backup) and may have paid.
 */
export type SendFailureDecision =
  | { readonly after: 'resend'; readonly pause: ResendPause }
  | { readonly after: 'refused_first' }
  | { readonly after: 'give_up_unprocessed' }
  | { readonly after: 'needs_review' }
  | { readonly after: 'key_reused' };

export type AfterSend = SendFailureDecision['after'];

/** The one decision after a failed send of a saved payload. */
export function decideAfterFailure(facts: SendFailureFacts, policy: PipelinePolicy): SendFailureDecision {
  const unprocessed = (): SendFailureDecision =>
    facts.uncertainBefore ? { after: 'needs_review' } : { after: 'give_up_unprocessed' };
  // Evidence, not a refusal: never failed, never signed again under another key (promise 1).
  if (facts.keyReused) return { after: 'key_reused' };
  switch (facts.kind) {
    case 'rejected':
      // A refusal proves the payload dead only if no earlier send of it may have been processed.
      return facts.uncertainBefore ? { after: 'needs_review' } : { after: 'refused_first' };
    case 'ambiguous':
      // This send may have been processed: from now on only the same payload may go.
      if (facts.ambiguousAnswers > policy.maxAmbiguousResends || facts.pastDeadline) {
        return { after: 'needs_review' };
      }
      return { after: 'resend', pause: { backoffAttempt: facts.ambiguousAnswers } };
    case 'rate_limited':
      if (facts.pastDeadline) return unprocessed();
      return { after: 'resend', pause: { ms: Math.min(facts.retryAfterMs ?? 1_000, policy.backoffMaxMs) } };
    case 'unavailable':
      if (facts.unavailableAnswers >= policy.maxUnavailableSends || facts.pastDeadline) return unprocessed();
      return { after: 'resend', pause: { backoffAttempt: facts.unavailableAnswers } };
  }
}

/**
 * What the chain said of a permit refused on its first send (evm/evm-refused-permit.ts): `resign`
 * our nonce is dead (used elsewhere, or presumed-used permits below expired unused); `final` the
 * refusal was about something else; `wait_transient` the chain could not tell in time; `wait_held`
 * a presumed-used permit below may still execute.
 */
export type ChainVerdict = 'resign' | 'final' | 'wait_transient' | 'wait_held';

export type RefusedPermitFacts = {
  readonly verdict: ChainVerdict;
  /** Refusals settled by this run, this one included. */
  readonly refusals: number;
  readonly pastDeadline: boolean;
};

/**
 * `sign_again` with the lease's nonce; `step_back` the owner's nonce keeps moving under the worker:
 * release the lease and come again later, queued; `fail_kept_moving` the same once the transient
 * budget is spent; `fail_refused` the refusal stands; `wait_transient` queued again with the
 * 3-minute clock running; `wait_held` queued until the held pool frees (the clock starts again).
 */
export type RefusedPermitDecision =
  'sign_again' | 'step_back' | 'fail_kept_moving' | 'fail_refused' | 'wait_transient' | 'wait_held';

export function decideAfterRefusedPermit(
  facts: RefusedPermitFacts,
  policy: PipelinePolicy,
): RefusedPermitDecision {
  switch (facts.verdict) {
    case 'resign':
      if (facts.refusals <= policy.maxResigns) return 'sign_again';
      return facts.pastDeadline ? 'fail_kept_moving' : 'step_back';
    case 'final':
      return 'fail_refused';
    case 'wait_transient':
      return 'wait_transient';
    case 'wait_held':
      return 'wait_held';
  }
}

export type RefusedSolanaFacts = {
  /** The built transaction's expiry (ms); NaN when unknown. */
  readonly expiresAt: number;
  readonly now: number;
  /** Fresh transactions this run built after an expired one. */
  readonly rebuilds: number;
};

/**
 * A Solana transaction refused on its first send never moved money. Refused because it expired, a
 * fresh one may be built (at most PipelinePolicy.maxRebuilds per run); otherwise the refusal stands.
 */
export function decideAfterRefusedSolanaTx(
  facts: RefusedSolanaFacts,
  policy: PipelinePolicy,
): 'rebuild' | 'fail_refused' {
  const expired = Number.isFinite(facts.expiresAt) && facts.expiresAt <= facts.now;
  return expired && facts.rebuilds < policy.maxRebuilds ? 'rebuild' : 'fail_refused';
}
