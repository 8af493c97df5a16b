import { describe, expect, it } from 'vitest';
import {
  InvalidSavedPermitError,
  NO_REFUSAL,
  fieldsOf,
  permitPatch,
  runRecordAfter,
  runRecordOf,
  savedSteps,
  storedWrite,
} from '../../src/store/saved-steps.ts';
import { SAMPLE_PERMIT, sampleTransferRecord } from '../helpers/fixtures.ts';

const PERMIT = SAMPLE_PERMIT;

const record = sampleTransferRecord;

describe('saved steps', () => {
  it('reads a fresh record as having no payload, no sends and round 0', () => {
    const steps = savedSteps(record({}));
    expect(steps.permit).toBeNull();
    expect(steps.payloadGen).toBeNull();
    expect(steps.sends).toBeNull();
    expect(steps.sendState).toBe('idle');
    expect(steps.uncertain).toBe(false);
    expect(steps.round).toBe(0);
    expect(steps.refusal).toBeNull();
    expect(steps.evidence).toEqual([]);
  });

  it('reads numbers as numbers, flags as booleans, the permit validated', () => {
    const steps = savedSteps(
      record({
        permit: JSON.stringify(PERMIT),
        permit_nonce: '7',
        permit_deadline: '1900000000',
        payload_gen: '2',
        sends: '3',
        send_state: 'sending',
        uncertain: '1',
        round: '4',
        first_seen_at: '1700000000000',
        refused_nonce: '7',
        refused_at: '1700000000500',
        refusal: 'rejected: HTTP 400',
        settle_at: '1900000030000',
        evidence: JSON.stringify(['a', 'b']),
      }),
    );
    expect(steps.permit).toEqual(PERMIT);
    expect(steps.permitNonce).toBe(7n);
    expect(steps.permitDeadline).toBe(1_900_000_000);
    expect(steps.payloadGen).toBe(2);
    expect(steps.sends).toBe(3);
    expect(steps.sendState).toBe('sending');
    expect(steps.uncertain).toBe(true);
    expect(steps.round).toBe(4);
    expect(steps.firstSeenAt).toBe(1_700_000_000_000);
    expect(steps.refusal).toEqual({ nonce: 7n, at: 1_700_000_000_500, reason: 'rejected: HTTP 400' });
    expect(steps.settleAt).toBe(1_900_000_030_000);
    expect(steps.evidence).toEqual(['a', 'b']);
  });

  it('refuses a damaged permit rather than reading it as no permit', () => {
    expect(() => savedSteps(record({ permit: '{"owner":"0x1"' }))).toThrow(InvalidSavedPermitError);
    expect(() => savedSteps(record({ permit: JSON.stringify({ ...PERMIT, nonce: '-1' }) }))).toThrow(
      /not a valid permit/,
    );
    expect(() => savedSteps(record({ permit: JSON.stringify({ ...PERMIT, v: '27' }) }))).toThrow(
      InvalidSavedPermitError,
    );
  });

  it('writes a permit patch as the fields a read gives back', () => {
    const patch = permitPatch(PERMIT, 3, { at: 1_700_000_000_000, site: 'ab12' });
    const fields = fieldsOf(patch);
    expect(fields['permit']).toBe(JSON.stringify(PERMIT));
    expect(fields['permit_nonce']).toBe('7');
    expect(fields['permit_deadline']).toBe('1900000000');
    expect(fields['prepared']).toBe('1');
    expect(fields['refused_at']).toBe('');
    const before = runRecordOf(record({ refused_at: '5', refused_nonce: '6', uncertain: '1' }));
    const after = runRecordAfter(before, { patch });
    // What the run carries after its write is what a read of the stored fields gives back.
    expect(after.steps).toEqual(savedSteps(after));
    expect(after.steps.permit).toEqual(PERMIT);
    expect(after.steps.permitNonce).toBe(7n);
    expect(after.steps.payloadGen).toBe(3);
    expect(after.steps.prepared).toBe(true);
    expect(after.steps.preparedAt).toBe(1_700_000_000_000);
    expect(after.steps.unsentSite).toBe('ab12');
    // A permit signed with its first send's mark says nowhere (it was never saved unsent); a cleared
    // permit takes its site along.
    expect(runRecordAfter(after, { patch: permitPatch(PERMIT, 4) }).steps.unsentSite).toBeNull();
    expect(runRecordAfter(after, { patch: { permit: null } }).raw['unsent_site']).toBeUndefined();
    expect(after.steps.uncertain).toBe(false);
    expect(after.steps.refusal).toBeNull();
    expect(after.steps.owner).toBe(PERMIT.owner);
  });

  it('stores outcome fields in their compact forms and reads them back whole', () => {
    const hash = `0x${'ab'.repeat(32)}`;
    const signature = '5'.repeat(88);
    const fields = fieldsOf({ txHash: hash, txSignature: signature, error: { code: 'x', message: 'y' } });
    expect(fields['tx_hash']).toBe('ab'.repeat(32));
    expect(fields['tx_signature']).toHaveLength(64);
    expect(fields['tx_signature_rest']).toHaveLength(24);
    const after = runRecordAfter(runRecordOf(record({})), {
      patch: { txHash: hash, txSignature: signature, error: { code: 'x', message: 'y' } },
    });
    expect(after.txHash).toBe(hash);
    expect(after.txSignature).toBe(signature);
    expect([after.errorCode, after.errorMessage]).toEqual(['x', 'y']);
  });

  it('stores a CCTP intent id (73 characters) in two compact fields, reads it back whole, and clears both', () => {
    const intentId = `cctp:6:0x${'cd'.repeat(32)}`;
    const fields = fieldsOf({ intentId });
    expect(fields['intent_id']).toBe(intentId.slice(0, 64));
    expect(fields['intent_id_rest']).toBe(intentId.slice(64));
    const after = runRecordAfter(runRecordOf(record({})), { patch: { intentId } });
    expect(after.intentId).toBe(intentId);
    expect(Object.values(after.raw).filter((v) => v.length > 64)).toEqual([]);
    // A service intent id fits one field; the rest is cleared with it (a retry's new intent).
    expect(fieldsOf({ intentId: 'int_1' })).toEqual({ intent_id: 'int_1', intent_id_rest: '' });
    const cleared = runRecordAfter(after, { patch: { intentId: null } });
    expect(cleared.intentId).toBeNull();
    expect(cleared.raw['intent_id_rest']).toBeUndefined();
    // A record written before the split holds the id whole in `intent_id`.
    expect(runRecordOf(record({ intent_id: intentId })).intentId).toBe(intentId);
  });

  it('clears fields and moves the state in runRecordAfter', () => {
    const rec = runRecordOf(record({ wait_reason: 'x', refused_at: '5' }));
    const after = runRecordAfter(rec, { state: 'failed', patch: { ...NO_REFUSAL, waitReason: null } });
    expect(after.state).toBe('failed');
    expect(after.waitReason).toBeNull();
    expect(after.steps.refusal).toBeNull();
    expect(savedSteps(after).refusal).toBeNull();
  });

  it('replaces the evidence list when a change carries it', () => {
    const rec = runRecordOf(record({ evidence: JSON.stringify(['a']) }));
    const after = runRecordAfter(rec, { evidence: ['a', 'b'] });
    expect(after.steps.evidence).toEqual(['a', 'b']);
  });
  it('deletes in one write only the cleared fields the carried record holds', () => {
    const patch = permitPatch(PERMIT, 2);
    // Without a carried record every cleared field is deleted.
    const blind = storedWrite(patch);
    expect(blind.gone).toEqual(
      expect.arrayContaining(['uncertain', 'ambiguous', 'unavailable', 'refusal', 'prepared']),
    );
    // The run's record holds `ambiguous` and `prepared` only: those two go, the absent ones are left.
    const carried = record({ ambiguous: '2', prepared: '1' });
    const write = storedWrite(patch, carried);
    expect([...write.gone].sort()).toEqual(['ambiguous', 'prepared']);
    expect(write.sets).toEqual(blind.sets);
    expect(Object.fromEntries(pairsOf(write.sets))).toMatchObject({ permit_nonce: '7', payload_gen: '2' });
  });
});

function pairsOf(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}
