import { describe, expect, it } from 'vitest';
import { decideScreening } from '../../src/pipeline/screening-check.ts';

// The last look before signing (docs/screening.md): pure, over what is known.
describe('the screening decision before signing', () => {
  const recipient = '0x8Cf798A5d316AF599dDE1d8dBEf58A98F47a6dDC';
  const listed = { list: 'sdn_advanced.xml', date: '2026-11-20' };

  it('lets a recipient no list names go while the lists are fresh', () => {
    expect(decideScreening({ recipient, listed: undefined, stale: undefined })).toEqual({ act: 'go' });
  });

  it('rejects a listed recipient recipient_sanctioned, naming the list and its date — stale or not', () => {
    for (const stale of [undefined, 'screening is stale: …']) {
      expect(decideScreening({ recipient, listed, stale })).toEqual({
        act: 'reject',
        refusal: {
          check: 'list',
          code: 'recipient_sanctioned',
          who: 'list:sdn_advanced.xml',
          message: `recipient ${recipient} is on the sanctions list sdn_advanced.xml of 2026-11-20`,
        },
      });
    }
  });

  it('makes every other transfer wait while the lists are stale', () => {
    expect(decideScreening({ recipient, listed: undefined, stale: 'screening is stale: x' })).toEqual({
      act: 'wait',
      reason: 'screening is stale: x',
    });
  });
});
