import { parseTransferRecord, type TransferRecord } from '../../src/store/transfer-record.ts';

// Shared with the benchmarks: the code lives in support/ (bench/ does not import test/).
export * from '../../support/fixtures.ts';

/** A saved permit's fields as the store keeps them (the unit tests of saved steps; not a valid signature). */
export const SAMPLE_PERMIT = {
  owner: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  spender: '0x0101010101010101010101010101010101010be0',
  value: '11010000',
  nonce: '7',
  deadline: '1900000000',
  signature: '0xabc',
  v: 27,
  r: '0x01',
  s: '0x02',
};

/**
 * A transfer record of batch b1 as parsed from the store, `in_progress`, with `fields` laid over
 * its stored hash (the unit tests of saved steps and of a run's record).
 */
export function sampleTransferRecord(fields: Record<string, string> = {}): TransferRecord {
  const rec = parseTransferRecord('b1', {
    id: 't1',
    line: '4',
    from: 'BASE',
    to: 'ARB',
    amount: '11010000',
    recipient: '0x0000000000000000000000000000000000000001',
    state: 'in_progress',
    ...fields,
  });
  if (!rec) throw new Error('test record did not parse');
  return rec;
}
