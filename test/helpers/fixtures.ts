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
