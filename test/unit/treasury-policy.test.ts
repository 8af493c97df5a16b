import { describe, expect, it } from 'vitest';
import { parsePolicy, type PolicyParse } from '../../src/treasury/policy.ts';

/*
 * Issue 33, finding 11: policy numbers went through a float (9007199254740993 became …992), hex,
 * octal and exponent forms were taken as amounts, a JSON policy with a key given twice kept the last
 * one, and messages named the wrong problem (`max_fee_bps: 1.5` "is required").
 */

const U = 1_000_000n;
const ok = (r: PolicyParse) => {
  if (!r.ok) throw new Error(`policy refused: ${r.problems.join('; ')}`);
  return r.policy;
};
const problems = (text: string, file = 'p.yaml') => {
  const r = parsePolicy(text, file);
  if (r.ok) throw new Error('the policy was accepted');
  return r.problems;
};
const AMOUNT = 'must be an amount in USDC (e.g. 5000 or "12.50")';

describe('policy numbers are read exactly as written', () => {
  it('keeps every digit of an amount, in YAML and in JSON: nothing goes through a float', () => {
    const yaml = ok(
      parsePolicy(
        'chains:\n  BASE: { min: 9007199254740993, target: 12345678901234567.123457 }\nmax_total: 9007199254740993.000001\nmin_move: 0.000001\n',
        'p.yaml',
      ),
    );
    expect(yaml.chains[0]).toEqual({
      chain: 'BASE',
      min: 9007199254740993n * U,
      target: 12345678901234567123457n,
    });
    expect(yaml.maxTotal).toBe(9007199254740993000001n);
    expect(yaml.minMove).toBe(1n);
    const json = ok(
      parsePolicy('{"chains": {"ARB": {"target": 18014398509481985, "min": 9007199254740993}}}', 'p.json'),
    );
    expect(json.chains[0]).toEqual({
      chain: 'ARB',
      min: 9007199254740993n * U,
      target: 18014398509481985n * U,
    });
  });

  it.each([
    ['0x10', 'is not a decimal amount (e.g. 12.50)'],
    ['0o777', 'is not a decimal amount (e.g. 12.50)'],
    ['1e3', 'must be a plain decimal, not an exponent'],
    ['+5', 'must not have a sign'],
    ['.inf', 'is not a decimal amount (e.g. 12.50)'],
    ['1.0000001', 'has more than 6 decimals'],
  ])('refuses %s as an amount, naming the key and the text as written', (written, reason) => {
    expect(problems(`chains:\n  BASE: { target: ${written} }\n`)).toEqual([
      `chains.BASE.target: ${AMOUNT}: ${written} ${reason}`,
    ]);
  });

  it('reads max_fee_bps as a whole number of basis points, with messages that say what is wrong', () => {
    const base = 'chains: { BASE: { target: 1 } }\n';
    expect(ok(parsePolicy(`${base}max_fee_bps: 30\n`, 'p.yaml')).maxFeeBps).toBe(30n);
    expect(ok(parsePolicy(`${base}max_fee_bps: "0"\n`, 'p.yaml')).maxFeeBps).toBe(0n);
    const bps = 'must be a whole number of basis points from 0 to 10000 (30 is 0.3 %)';
    for (const [written, message] of [
      ['1.5', `${bps}, not 1.5`],
      ['0x10', `${bps}, not 0x10`],
      ['-1', `${bps}, not -1`],
      ['1e2', `${bps}, not 1e2`],
      ['true', `${bps}, not true`],
      ['10001', 'must be at most 10000 (100 %), not 10001'],
      ['9007199254740993', 'must be at most 10000 (100 %), not 9007199254740993'],
    ]) {
      expect(problems(`${base}max_fee_bps: ${written}\n`), written).toEqual([`max_fee_bps: ${message}`]);
    }
  });
});

describe('policy keys and structure', () => {
  it('refuses a key given twice, in JSON and in YAML, naming it', () => {
    expect(
      problems('{"chains": {"BASE": {"target": 1, "target": 2}}, "max_total": 5, "max_total": 6}', 'p.json'),
    ).toEqual(['chains.BASE.target: is given twice', 'max_total: is given twice']);
    expect(
      problems('chains:\n  ARB: { target: 1 }\n  ARB: { target: 2 }\nmin_move: 1\nmin_move: 1\n'),
    ).toEqual(['chains.ARB: is given twice', 'min_move: is given twice']);
  });

  it('reads via: the road of its moves, EVM chains only on CCTP', () => {
    const evm = 'chains: { BASE: { target: 1 }, ARB: { target: 2 } }\n';
    expect(ok(parsePolicy(`${evm}via: cctp\n`, 'p.yaml')).via).toBe('cctp');
    expect(ok(parsePolicy(`${evm}via: CCTP-FAST\n`, 'p.yaml')).via).toBe('cctp-fast');
    expect(ok(parsePolicy(evm, 'p.yaml')).via).toBeNull();
    expect(problems(`${evm}via: bridge\n`)).toEqual([
      'via: must be one of service, cctp, cctp-fast, not "bridge"',
    ]);
    expect(problems('chains: { BASE: { target: 1 }, SOLANA: { target: 2 } }\nvia: cctp\n')).toEqual([
      'via: cctp runs between EVM chains only; chains.SOLANA needs via: service',
    ]);
    expect(ok(parsePolicy('chains: { SOLANA: { target: 2 } }\nvia: service\n', 'p.yaml')).via).toBe(
      'service',
    );
  });

  it('says what a value should be, not that it is missing', () => {
    expect(problems('name: 5\nchains: [BASE]\n')).toEqual([
      'chains: must be a mapping of chains to { min, target } (e.g. BASE: { min: 5000, target: 20000 }), not a list',
    ]);
    expect(problems('name: true\nchains: { BASE: 5, ARB: { target: 1, min: } }\n')).toEqual([
      'name: must be 1-40 of A-Z a-z 0-9 _ . -, not true',
      'chains.BASE: must be a mapping with target (and min), not 5',
      `chains.ARB.min: ${AMOUNT}, not empty`,
    ]);
    expect(problems('chains: { BASE: { min: 1 } }\n')).toEqual(['chains.BASE.target: is required']);
    expect(problems('')).toEqual(['chains: is required']);
    expect(problems('- 1\n- 2\n')).toEqual([
      '(file): must be a mapping of name, chains, min_move, max_fee_bps, max_total and via, not a list',
    ]);
    // A name written as a number is the text written.
    expect(ok(parsePolicy('name: 007\nchains: { BASE: { target: 1 } }\n', 'p.yaml')).name).toBe('007');
  });

  it('reports a YAML or JSON syntax error once, with its line and column, and nothing dangling', () => {
    expect(problems('chains:\n  BASE: {target: 1}\n  ARB: target: 2\n')).toEqual([
      '(file): not valid YAML at line 3, column 8: Nested mappings are not allowed in compact mappings',
    ]);
    const [unclosed] = problems('chains: [\n');
    expect(unclosed).toMatch(/^\(file\): not valid YAML at line \d+, column \d+: \S/);
    expect(unclosed).not.toMatch(/:\s*$/);
    expect(problems('{"chains": {"BASE": {"target": 1,}}}', 'p.json')).toEqual([
      expect.stringMatching(/^\(file\): not valid JSON: .*line 1 column 34/),
    ]);
  });

  it('reads chain codes in any letter case, as a CSV does', () => {
    const policy = ok(
      parsePolicy('chains:\n  base: { min: 1, target: 2 }\n  Solana: { target: 3 }\n', 'p.yaml'),
    );
    expect(policy.chains.map((c) => [c.chain, c.min, c.target])).toEqual([
      ['BASE', U, 2n * U],
      ['SOLANA', null, 3n * U],
    ]);
    expect(
      problems('chains:\n  base: { target: 1 }\n  BASE: { target: 2 }\n  tron: { target: 1 }\n'),
    ).toEqual([
      'chains.BASE: is given twice (as base and BASE)',
      'chains.tron: unknown chain (one of ETH, BASE, ARB, POLYGON, SOLANA)',
    ]);
    // Problems inside a lowercase chain are named by its code.
    expect(problems('chains:\n  arb: { min: 5, target: 1 }\n')).toEqual([
      'chains.ARB.min: must not exceed target',
    ]);
  });

  it('follows YAML anchors and aliases', () => {
    const policy = ok(parsePolicy('chains:\n  BASE: &t { min: 5, target: 10 }\n  ARB: *t\n', 'p.yaml'));
    expect(policy.chains).toEqual([
      { chain: 'BASE', min: 5n * U, target: 10n * U },
      { chain: 'ARB', min: 5n * U, target: 10n * U },
    ]);
  });
});
