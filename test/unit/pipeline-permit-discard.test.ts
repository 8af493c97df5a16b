import { describe, expect, it } from 'vitest';
import { recordMayHaveLostMark } from '../../src/pipeline/evm/permit-discard.ts';

/*
 * docs/replicated-redis.md: when the record alone may say that a saved permit was never sent. Only
 * a failover (a new primary, a new replication id) loses acknowledged writes, so the record is
 * authoritative while the primary is the one the permit was saved unsent on and every replica it has
 * had acknowledges.
 */
describe('permit discard: may the record have lost a sending mark', () => {
  const A = 'a'.repeat(40);
  const B = 'b'.repeat(40);

  it('no: the primary is the one the permit was saved on, and auto asks every replica it has had', () => {
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 0 }, setting: 'auto' })).toBe(
      false,
    );
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 2 }, setting: 'auto' })).toBe(
      false,
    );
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 2 }, setting: 2 })).toBe(false);
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 0 }, setting: 0 })).toBe(false);
  });

  it('yes: a failover (or a restart, a restore) since it was saved', () => {
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: B, replicas: 1 }, setting: 'auto' })).toBe(
      true,
    );
  });

  it('yes: fewer acknowledgements asked than the replicas the primary has had', () => {
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 2 }, setting: 1 })).toBe(true);
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: A, replicas: 1 }, setting: 0 })).toBe(true);
  });

  it('yes: where either side is not known', () => {
    expect(recordMayHaveLostMark({ savedOn: null, now: { primary: A, replicas: 0 }, setting: 'auto' })).toBe(
      true,
    );
    expect(recordMayHaveLostMark({ savedOn: A, now: undefined, setting: 'auto' })).toBe(true);
    // INFO refused by an ACL: the primary cannot be told.
    expect(recordMayHaveLostMark({ savedOn: A, now: { primary: '', replicas: 0 }, setting: 'auto' })).toBe(
      true,
    );
  });
});
