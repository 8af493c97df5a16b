import { describe, expect, it } from 'vitest';
import {
  decideAfterFailure,
  decideAfterRefusedPermit,
  decideAfterRefusedSolanaTx,
  type SendFailureFacts,
} from '../../src/pipeline/failure-decision.ts';
import { DEFAULT_POLICY } from '../../src/pipeline/policy.ts';
import type { FailureKind } from '../../src/service/types.ts';

const policy = DEFAULT_POLICY;

function facts(over: Partial<SendFailureFacts> & { kind: FailureKind }): SendFailureFacts {
  return {
    uncertainBefore: false,
    ambiguousAnswers: over.kind === 'ambiguous' ? 1 : 0,
    unavailableAnswers: over.kind === 'unavailable' ? 1 : 0,
    pastDeadline: false,
    keyReused: false,
    ...over,
  };
}

describe('decideAfterFailure: a failed send of a saved payload', () => {
  it.each([
    // [case, facts, decision]
    [
      'lost answer: re-send the same payload',
      facts({ kind: 'ambiguous' }),
      { after: 'resend', pause: { backoffAttempt: 1 } },
    ],
    [
      'lost answers up to the bound: still the same payload',
      facts({ kind: 'ambiguous', uncertainBefore: true, ambiguousAnswers: policy.maxAmbiguousResends }),
      { after: 'resend', pause: { backoffAttempt: policy.maxAmbiguousResends } },
    ],
    [
      'lost answers past the bound: needs review',
      facts({ kind: 'ambiguous', uncertainBefore: true, ambiguousAnswers: policy.maxAmbiguousResends + 1 }),
      { after: 'needs_review' },
    ],
    [
      'lost answer, deadline passed: needs review',
      facts({ kind: 'ambiguous', pastDeadline: true }),
      { after: 'needs_review' },
    ],
    ['refusal of a first send: it moved no money', facts({ kind: 'rejected' }), { after: 'refused_first' }],
    [
      'refusal of a first send, deadline passed: still refused_first (the refusal is settled)',
      facts({ kind: 'rejected', pastDeadline: true }),
      { after: 'refused_first' },
    ],
    [
      'refusal of a re-send after a lost answer: needs review',
      facts({ kind: 'rejected', uncertainBefore: true }),
      { after: 'needs_review' },
    ],
    [
      '429: re-send after Retry-After',
      facts({ kind: 'rate_limited', retryAfterMs: 3_000 }),
      { after: 'resend', pause: { ms: 3_000 } },
    ],
    [
      '429 without Retry-After: one second',
      facts({ kind: 'rate_limited' }),
      { after: 'resend', pause: { ms: 1_000 } },
    ],
    [
      '429 with a long Retry-After: capped at the backoff maximum',
      facts({ kind: 'rate_limited', retryAfterMs: 10 * policy.backoffMaxMs }),
      { after: 'resend', pause: { ms: policy.backoffMaxMs } },
    ],
    [
      '429, deadline passed, never processed: give up',
      facts({ kind: 'rate_limited', pastDeadline: true }),
      { after: 'give_up_unprocessed' },
    ],
    [
      '429, deadline passed, after a lost answer: needs review',
      facts({ kind: 'rate_limited', pastDeadline: true, uncertainBefore: true }),
      { after: 'needs_review' },
    ],
    [
      'unavailable: re-send',
      facts({ kind: 'unavailable' }),
      { after: 'resend', pause: { backoffAttempt: 1 } },
    ],
    [
      'unavailable at the bound, never processed: give up',
      facts({ kind: 'unavailable', unavailableAnswers: policy.maxUnavailableSends }),
      { after: 'give_up_unprocessed' },
    ],
    [
      'unavailable at the bound after a lost answer: needs review',
      facts({ kind: 'unavailable', unavailableAnswers: policy.maxUnavailableSends, uncertainBefore: true }),
      { after: 'needs_review' },
    ],
    [
      'unavailable, deadline passed, never processed: give up',
      facts({ kind: 'unavailable', pastDeadline: true }),
      { after: 'give_up_unprocessed' },
    ],
    [
      'unavailable, deadline passed, after a lost answer: needs review',
      facts({ kind: 'unavailable', pastDeadline: true, uncertainBefore: true }),
      { after: 'needs_review' },
    ],
    [
      'its Idempotency-Key used before with another payload (a first send): evidence, not a refusal',
      facts({ kind: 'rejected', keyReused: true }),
      { after: 'key_reused' },
    ],
    [
      'its Idempotency-Key used before, answered as a conflict: the same',
      facts({ kind: 'ambiguous', keyReused: true }),
      { after: 'key_reused' },
    ],
  ] as const)('%s', (_name, f, decision) => {
    expect(decideAfterFailure(f, policy)).toEqual(decision);
  });

  it('never lets a payload that may have been processed be replaced or given up on, over the whole table', () => {
    const kinds: FailureKind[] = ['rejected', 'ambiguous', 'rate_limited', 'unavailable'];
    for (const kind of kinds) {
      for (const uncertainBefore of [false, true]) {
        for (const pastDeadline of [false, true]) {
          for (let n = 0; n <= policy.maxAmbiguousResends + policy.maxUnavailableSends + 2; n++) {
            const f: SendFailureFacts = {
              kind,
              uncertainBefore,
              pastDeadline,
              ambiguousAnswers: kind === 'ambiguous' ? n + 1 : 0,
              unavailableAnswers: kind === 'unavailable' ? n + 1 : 0,
              keyReused: false,
            };
            const { after } = decideAfterFailure(f, policy);
            if (uncertainBefore || kind === 'ambiguous') {
              expect(['resend', 'needs_review'], `${kind} ${JSON.stringify(f)}`).toContain(after);
            }
            if (pastDeadline && kind !== 'rejected') expect(after).not.toBe('resend');
            // A reused key is never a refusal to sign again after, nor a failure.
            expect(decideAfterFailure({ ...f, keyReused: true }, policy)).toEqual({ after: 'key_reused' });
          }
        }
      }
    }
  });
});

describe('decideAfterRefusedPermit: the chain settled a permit refused on its first send', () => {
  it.each([
    [
      'chain moved: sign again with its nonce',
      { verdict: 'resign', refusals: 1, pastDeadline: false },
      'sign_again',
    ],
    [
      'chain moved, up to the bound of re-signs',
      { verdict: 'resign', refusals: policy.maxResigns, pastDeadline: false },
      'sign_again',
    ],
    [
      'chain keeps moving: step back, queued, and come again',
      { verdict: 'resign', refusals: policy.maxResigns + 1, pastDeadline: false },
      'step_back',
    ],
    [
      'chain keeps moving, deadline passed: failed',
      { verdict: 'resign', refusals: policy.maxResigns + 1, pastDeadline: true },
      'fail_kept_moving',
    ],
    [
      'chain moved, deadline passed, within the bound: sign again',
      { verdict: 'resign', refusals: 1, pastDeadline: true },
      'sign_again',
    ],
    [
      'chain at our nonce: the refusal stands',
      { verdict: 'final', refusals: 1, pastDeadline: false },
      'fail_refused',
    ],
    [
      'chain could not tell: wait queued, the clock running',
      { verdict: 'wait_transient', refusals: 1, pastDeadline: false },
      'wait_transient',
    ],
    [
      'a presumed-used permit below may still execute: wait for it',
      { verdict: 'wait_held', refusals: 2, pastDeadline: true },
      'wait_held',
    ],
  ] as const)('%s', (_name, f, decision) => {
    expect(decideAfterRefusedPermit(f, policy)).toBe(decision);
  });
});

describe('decideAfterRefusedSolanaTx: a Solana transaction refused on its first send', () => {
  const now = 1_700_000_000_000;
  it.each([
    ['expired: build a fresh one', { expiresAt: now - 1, now, rebuilds: 0 }, 'rebuild'],
    ['expiring at this very ms counts as expired', { expiresAt: now, now, rebuilds: 0 }, 'rebuild'],
    [
      'expired, rebuilt as often as allowed: the refusal stands',
      { expiresAt: now - 1, now, rebuilds: policy.maxRebuilds },
      'fail_refused',
    ],
    ['not expired: the refusal stands', { expiresAt: now + 60_000, now, rebuilds: 0 }, 'fail_refused'],
    ['no known expiry: the refusal stands', { expiresAt: Number.NaN, now, rebuilds: 0 }, 'fail_refused'],
  ] as const)('%s', (_name, f, decision) => {
    expect(decideAfterRefusedSolanaTx(f, policy)).toBe(decision);
  });
});
