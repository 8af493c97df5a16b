import { describe, expect, it } from 'vitest';
import {
  fieldsOf,
  runRecordAfter,
  runRecordOf,
  savedSteps,
  type RunRecord,
  type StepsPatch,
} from '../../src/store/saved-steps.ts';
import { parseTransferRecord } from '../../src/store/transfer-record.ts';
import { SAMPLE_PERMIT, sampleTransferRecord } from '../helpers/fixtures.ts';

/*
 * A run's record after its own write is laid over it without storing and parsing it again
 * (runRecordAfter). It must read exactly as the record stored and parsed back would: this holds the
 * two paths equal over every kind of value each patch field takes, alone and mixed.
 */

const PERMIT = SAMPLE_PERMIT;
const HASH = `0x${'ab'.repeat(32)}`;

/** The values each patch field is tried with: set, cleared, empty, zero, odd shapes. */
const VALUES: { readonly [K in keyof StepsPatch]-?: readonly StepsPatch[K][] } = {
  permit: [PERMIT, { ...PERMIT, nonce: '8', owner: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' }, null],
  prepared: [true, false],
  preparedAt: [1_700_000_000_000, 0, null],
  unsentSite: ['a1b2c3', '', null],
  solanaIntent: ['intent-1', '', null],
  solanaExpiresAt: ['2026-11-29T00:00:00.000Z', 'not a date', '', null],
  solanaSigned: ['AQID', '', null],
  payloadGen: [1, 3, 0],
  sends: [1, 0, null],
  sendState: ['sending', 'idle'],
  uncertain: [true, false],
  ambiguous: [2, 0],
  unavailable: [1, 0],
  firstSeenAt: [1_700_000_000_123, null],
  round: [0, 2],
  reestimate: [true, false],
  spendReserved: [true, false],
  refusal: [{ nonce: 7n, at: 5, reason: 'nonce used' }, { nonce: 0n, at: 9, reason: '' }, null],
  settleAt: [1_700_000_000_500, null],
  settled: [true, false],
  lastError: ['boom', null],
  attempts: [3, 0],
  owner: ['0x70997970C51812dc3A010C7d01b50e0d17dc79C8', ''],
  intentId: ['i-1', '', null],
  intentStatus: ['pending', null],
  txHash: [HASH, HASH.slice(2), '0x1234', '', null],
  txSignature: ['5'.repeat(88), 'short', '', null],
  error: [{ code: 'refused', message: 'no' }, { code: '', message: '' }, null],
  waitReason: ['waiting', '', null],
  resolvedBy: ['cli:ops'],
  cctp: [
    { burnGen: 1, maxFee: 12n, burnTx: HASH, attestation: 'pending' },
    { nonce: HASH, attestation: 'complete', mintTx: HASH, mintGen: 2 },
    { burnTx: null, attestation: null, maxFee: null },
  ],
  evidence: [['2026-11-29T00:00:00Z one', 'two'], []],
};

const BASES: Record<string, string>[] = [
  {},
  {
    permit: JSON.stringify(PERMIT),
    permit_nonce: '7',
    permit_deadline: '1900000000',
    owner: PERMIT.owner,
    payload_gen: '2',
    sends: '1',
    send_state: 'sending',
    uncertain: '1',
    ambiguous: '1',
    refused_at: '5',
    refused_nonce: '6',
    refusal: 'used',
    wait_reason: 'x',
    evidence: JSON.stringify(['a']),
    error_code: 'c',
    error_message: 'm',
    intent_id: 'i',
    tx_hash: 'ab'.repeat(32),
    fee_total: '10',
    net_receive: '5',
    unsent_site: 'site',
  },
];

function base(fields: Record<string, string>): RunRecord {
  return runRecordOf(sampleTransferRecord(fields));
}

/** The old way: the patch stored (fieldsOf), merged into the hash, the whole record parsed again. */
function storedAndParsed(
  rec: RunRecord,
  change: { state?: 'queued' | 'submitted'; patch: StepsPatch; evidence?: readonly string[] },
): RunRecord {
  const raw: Record<string, string> = { ...rec.raw };
  for (const [f, v] of Object.entries(fieldsOf(change.patch))) {
    if (v === '') delete raw[f];
    else raw[f] = v;
  }
  if (change.evidence) raw['evidence'] = JSON.stringify(change.evidence);
  if (change.state !== undefined) raw['state'] = change.state;
  const next = parseTransferRecord(rec.batchId, raw);
  if (!next) throw new Error('did not parse');
  return { ...next, steps: savedSteps(next) };
}

const show = (v: unknown): string =>
  JSON.stringify(v, (_, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));

/** A small deterministic generator, so a failure names a case that can be run again. */
function lcg(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x / 2_147_483_648;
  };
}

describe('a run record after its own write (runRecordAfter)', () => {
  const keys = Object.keys(VALUES) as (keyof StepsPatch)[];

  it('reads each field of a patch alone as the record stored and parsed back would', () => {
    for (const fields of BASES) {
      for (const key of keys) {
        for (const value of VALUES[key]) {
          const rec = base(fields);
          const patch = { [key]: value } as StepsPatch;
          expect(runRecordAfter(rec, { patch }), `${key} = ${show(value)}`).toEqual(
            storedAndParsed(rec, { patch }),
          );
        }
      }
    }
  });

  it('reads 2,000 mixed patches, states and evidence lists as the stored-and-parsed record', () => {
    const random = lcg(44);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    for (let i = 0; i < 2_000; i++) {
      let rec = base(pick(BASES));
      // A run writes several times: each write laid over the record the last one left.
      for (let w = 0; w < 3; w++) {
        const patch: Record<string, unknown> = {};
        for (const key of keys) if (random() < 0.25) patch[key] = pick(VALUES[key] as readonly unknown[]);
        const change = {
          patch: patch as StepsPatch,
          ...(random() < 0.3 ? { state: pick(['queued', 'submitted'] as const) } : {}),
          ...(random() < 0.2 ? { evidence: ['late line'] } : {}),
        };
        const fast = runRecordAfter(rec, change);
        expect(fast, `case ${i}, write ${w}: ${show(patch)}`).toEqual(storedAndParsed(rec, change));
        rec = fast;
      }
    }
  });
});
