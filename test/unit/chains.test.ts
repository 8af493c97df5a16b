import {
  arbitrum,
  arbitrumSepolia,
  base,
  baseSepolia,
  mainnet,
  polygon,
  polygonAmoy,
  sepolia,
} from 'viem/chains';
import { describe, expect, it } from 'vitest';
import { checkEvmAddress, checkSolanaAddress } from '../../src/domain/addresses.ts';
import {
  CCTP_DOMAIN,
  CHAIN_ROLES,
  CHAINS,
  EVM_CHAINS,
  NETWORKS,
  SOLANA_USDC_MINT,
  USDC_EVM,
  isEvmChain,
  isValidRoute,
  parseChain,
} from '../../src/domain/chains.ts';

describe('chain codes', () => {
  it('reads chain codes in any letter case and refuses unknown ones', () => {
    expect(parseChain('base')).toBe('BASE');
    expect(parseChain('Solana')).toBe('SOLANA');
    expect(parseChain(' polygon ')).toBe('POLYGON');
    expect(parseChain('MATIC')).toBeUndefined();
    expect(parseChain('')).toBeUndefined();
  });

  it('gives each operation of the service the chains its spec allows', () => {
    expect([...CHAIN_ROLES.transferSource]).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON']);
    expect([...CHAIN_ROLES.transferDestination]).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA']);
    expect([...CHAIN_ROLES.buildTxDestination]).toEqual(['ETH', 'BASE', 'ARB', 'POLYGON']);
    expect(isEvmChain('SOLANA')).toBe(false);
  });

  it('pays from SOLANA only to an EVM chain, and from an EVM chain anywhere', () => {
    for (const from of CHAINS) {
      for (const to of CHAINS) {
        expect(isValidRoute(from, to), `${from} → ${to}`).toBe(from !== 'SOLANA' || to !== 'SOLANA');
      }
    }
  });
});

describe('the USDC table per NETWORK', () => {
  const viemChains = {
    mainnet: { ETH: mainnet, BASE: base, ARB: arbitrum, POLYGON: polygon },
    testnet: { ETH: sepolia, BASE: baseSepolia, ARB: arbitrumSepolia, POLYGON: polygonAmoy },
  } as const;

  it("uses the chain ids viem knows for each chain's mainnet and testnet", () => {
    for (const network of NETWORKS) {
      for (const chain of EVM_CHAINS) {
        expect(USDC_EVM[network][chain].chainId, `${network} ${chain}`).toBe(viemChains[network][chain].id);
      }
    }
  });

  it('holds every USDC contract as a valid EIP-55 checksummed address, distinct per chain', () => {
    const seen = new Set<string>();
    for (const network of NETWORKS) {
      for (const chain of EVM_CHAINS) {
        const { usdc } = USDC_EVM[network][chain];
        expect(checkEvmAddress(usdc)).toEqual({ ok: true, value: usdc });
        seen.add(usdc.toLowerCase());
      }
    }
    expect(seen.size).toBe(NETWORKS.length * EVM_CHAINS.length);
  });

  it("names USDC's EIP-712 domain as deployed: 'USD Coin' on mainnet, 'USDC' on testnets, version 2", () => {
    for (const chain of EVM_CHAINS) {
      expect(USDC_EVM.mainnet[chain]).toMatchObject({ eip712Name: 'USD Coin', eip712Version: '2' });
      expect(USDC_EVM.testnet[chain]).toMatchObject({ eip712Name: 'USDC', eip712Version: '2' });
    }
  });

  it('holds the Solana USDC mint of each network as a valid Solana address', () => {
    expect(SOLANA_USDC_MINT.mainnet).toBe('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
    for (const network of NETWORKS) expect(checkSolanaAddress(SOLANA_USDC_MINT[network]).ok).toBe(true);
  });

  it("maps every chain to Circle's CCTP domain id", () => {
    expect(CCTP_DOMAIN).toEqual({ ETH: 0, ARB: 3, SOLANA: 5, BASE: 6, POLYGON: 7 });
  });
});
