import { describe, expect, it } from 'vitest';
import { cctpAddressesOf, parseGwei } from '../../src/config/cctp-settings.ts';
import { CCTP_V2_CONTRACTS } from '../../src/domain/cctp.ts';
import { USDC_EVM } from '../../src/domain/chains.ts';
import { controlSettingsOf } from '../../src/config/control-settings.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { ConfigError } from '../../src/domain/errors.ts';

/* docs/cctp.md: the second road's settings, parsed at start with errors naming each one. */

const ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => ({ ...p }));
    throw err;
  }
  return [];
}

describe('the second road in the configuration', () => {
  it('defaults: the service road, Circle attestation API per NETWORK, no overrides, no gas cap', () => {
    const testnet = loadConfig({});
    expect(testnet.transferVia).toBe('service');
    expect(testnet.cctpApiUrl).toBe('https://iris-api-sandbox.circle.com');
    expect(testnet.cctpTokenMessenger).toEqual({});
    expect(testnet.cctpMessageTransmitter).toEqual({});
    expect(testnet.usdcAddress).toEqual({});
    expect(testnet.maxGasWei).toEqual({});
    expect(loadConfig({ NETWORK: 'mainnet' }).cctpApiUrl).toBe('https://iris-api.circle.com');
  });

  it('reads each setting per chain', () => {
    const c = loadConfig({
      TRANSFER_VIA: 'CCTP-fast',
      CCTP_API_URL: 'http://127.0.0.1:8787/cctp/',
      CCTP_TOKEN_MESSENGER_BASE: ADDRESS.toLowerCase(),
      CCTP_MESSAGE_TRANSMITTER_ARB: ADDRESS,
      USDC_ADDRESS_ETH: ADDRESS,
      MAX_GAS_GWEI_ETH: '50',
      MAX_GAS_GWEI_POLYGON: '0.000000001',
    });
    expect(c.transferVia).toBe('cctp-fast');
    expect(c.cctpApiUrl).toBe('http://127.0.0.1:8787/cctp');
    expect(c.cctpTokenMessenger).toEqual({ BASE: ADDRESS });
    expect(c.cctpMessageTransmitter).toEqual({ ARB: ADDRESS });
    expect(c.usdcAddress).toEqual({ ETH: ADDRESS });
    expect(c.maxGasWei).toEqual({ ETH: 50_000_000_000n, POLYGON: 1n });
  });

  it("uses Circle's published addresses for NETWORK where no setting replaces them", () => {
    const c = loadConfig({
      NETWORK: 'mainnet',
      CCTP_TOKEN_MESSENGER_BASE: ADDRESS,
      USDC_ADDRESS_BASE: ADDRESS,
    });
    expect(cctpAddressesOf(c, 'BASE')).toEqual({
      tokenMessenger: ADDRESS,
      messageTransmitter: CCTP_V2_CONTRACTS.mainnet.BASE.messageTransmitter,
      usdc: ADDRESS,
    });
    expect(cctpAddressesOf(c, 'ETH')).toEqual({
      ...CCTP_V2_CONTRACTS.mainnet.ETH,
      usdc: USDC_EVM.mainnet.ETH.usdc,
    });
  });

  it('names every wrong setting at once', () => {
    const problems = problemsOf({
      TRANSFER_VIA: 'bridge',
      CCTP_API_URL: 'ftp://iris.example.com',
      CCTP_TOKEN_MESSENGER_ETH: '0x1234',
      CCTP_MESSAGE_TRANSMITTER_BASE: 'nope',
      USDC_ADDRESS_ARB: ADDRESS.slice(0, -1),
      MAX_GAS_GWEI_ETH: '0',
      MAX_GAS_GWEI_BASE: '1.0000000001',
      MAX_GAS_GWEI_ARB: '-5',
      MAX_GAS_GWEI_POLYGON: '50 gwei',
    });
    expect(problems.map((p) => p.variable).sort()).toEqual(
      [
        'CCTP_API_URL',
        'CCTP_MESSAGE_TRANSMITTER_BASE',
        'CCTP_TOKEN_MESSENGER_ETH',
        'MAX_GAS_GWEI_ARB',
        'MAX_GAS_GWEI_BASE',
        'MAX_GAS_GWEI_ETH',
        'MAX_GAS_GWEI_POLYGON',
        'TRANSFER_VIA',
        'USDC_ADDRESS_ARB',
      ].sort(),
    );
    const via = problems.find((p) => p.variable === 'TRANSFER_VIA');
    expect(via?.message).toBe('must be one of service, cctp, cctp-fast');
    expect(problems.find((p) => p.variable === 'MAX_GAS_GWEI_ETH')?.message).toContain('(got "0")');
  });

  it('parses gwei exactly, refusing 0, too many decimals and absurd prices', () => {
    expect(parseGwei('1')).toBe(1_000_000_000n);
    expect(parseGwei('0.5')).toBe(500_000_000n);
    expect(parseGwei('1000000')).toBe(1_000_000n * 10n ** 9n);
    for (const bad of ['0', '0.0', '1000001', '1e3', '.5', '1.', '0x10', '1.0000000001']) {
      expect(parseGwei(bad), bad).toBeUndefined();
    }
  });

  it('TRANSFER_VIA and MAX_GAS_GWEI_<CHAIN> are not controls (promise 5 lists the controls)', () => {
    const names = controlSettingsOf(loadConfig({})).map((s) => s.name);
    expect(names.some((n) => n.startsWith('TRANSFER_VIA') || n.startsWith('MAX_GAS_GWEI'))).toBe(false);
  });
});
