import { describe, expect, it } from 'vitest';
import {
  parseBuildTx,
  parseEstimate,
  parseIntentStatus,
  parseServiceError,
  parseSubmit,
  parseTransfer,
} from '../../src/service/parse-response.ts';

describe('parsing the service answers', () => {
  it('reads an estimate in micro-USDC, snake or camel case', () => {
    const snake = parseEstimate({
      amount: '10.00',
      fee: { total: '0.045', platform: '0.01', gas: '0.035' },
      net_receive: '9.955',
    });
    expect(snake).toEqual({
      ok: true,
      value: {
        amount: 10_000_000n,
        fee: { total: 45_000n, platform: 10_000n, gas: 35_000n },
        netReceive: 9_955_000n,
      },
    });
    const camel = parseEstimate({
      amount: '1',
      fee: { total: '0', platform: '0', gas: '0' },
      netReceive: '1',
    });
    expect(camel.ok && camel.value.netReceive).toBe(1_000_000n);
  });

  it('refuses an estimate with a missing or malformed amount instead of crashing', () => {
    expect(
      parseEstimate({ amount: '10', fee: { total: '-1', platform: '0', gas: '0' }, net_receive: '9' }).ok,
    ).toBe(false);
    expect(parseEstimate({ amount: '10', net_receive: '9' }).ok).toBe(false);
    expect(
      parseEstimate({ amount: '1e3', fee: { total: '0', platform: '0', gas: '0' }, net_receive: '9' }).ok,
    ).toBe(false);
    expect(parseEstimate('nope').ok).toBe(false);
    expect(parseEstimate(null).ok).toBe(false);
  });

  it('reads intent ids and statuses tolerantly (intent_id|intentId, status|state, data envelope)', () => {
    expect(parseTransfer({ intentId: 'i1', state: 'pending', txHash: '0xab' })).toEqual({
      ok: true,
      value: { intentId: 'i1', status: 'pending', txHash: '0xab' },
    });
    expect(parseTransfer({ data: { intent_id: 'i2', status: 'pending' } })).toEqual({
      ok: true,
      value: { intentId: 'i2', status: 'pending', txHash: null },
    });
    expect(parseTransfer({ status: 'pending' }).ok).toBe(false);
    expect(parseSubmit({ intent_id: 'i3', tx_signature: 'sig' })).toEqual({
      ok: true,
      value: { intentId: 'i3', status: 'pending', txSignature: 'sig' },
    });
    expect(parseBuildTx({ intent_id: 'i4', transaction: 'AQID', expiresAt: '2030-01-01T00:00:00Z' })).toEqual(
      {
        ok: true,
        value: { intentId: 'i4', transaction: 'AQID', expiresAt: '2030-01-01T00:00:00Z' },
      },
    );
    expect(parseBuildTx({ intent_id: 'i4', transaction: 'not base64!' }).ok).toBe(false);
    expect(parseIntentStatus({ intentId: 'i5', state: 'Minted' }, 'i5')).toEqual({
      ok: true,
      value: { intentId: 'i5', status: 'minted' },
    });
    expect(parseIntentStatus({ intent_id: 'other', status: 'complete' }, 'i5').ok).toBe(false);
  });

  it('finds the service error code and message in the common shapes', () => {
    expect(parseServiceError({ error: { code: 'x', message: 'y' } })).toEqual({ code: 'x', message: 'y' });
    expect(parseServiceError({ error: 'x', message: 'y' })).toEqual({ code: 'x', message: 'y' });
    expect(parseServiceError({ code: 42, message: 'y' })).toEqual({ code: '42', message: 'y' });
    expect(parseServiceError('oops')).toEqual({});
  });
});
