/** Chain codes of the transfer service and their roles (docs/transfer-service.md §2.1). */
export const CHAINS = ['ETH', 'BASE', 'ARB', 'POLYGON', 'SOLANA'] as const;
export type Chain = (typeof CHAINS)[number];
export const EVM_CHAINS = ['ETH', 'BASE', 'ARB', 'POLYGON'] as const;
export type EvmChain = (typeof EVM_CHAINS)[number];

/**
 * What each operation of the service accepts (docs/transfer-service.md §2.1). A SOLANA source has no chain-code
 * parameter: it is implied by the build-tx flow, whose destination must be EVM.
 */
export const CHAIN_ROLES = {
  transferSource: EVM_CHAINS,
  transferDestination: CHAINS,
  buildTxDestination: EVM_CHAINS,
} as const;

export const NETWORKS = ['testnet', 'mainnet'] as const;
export type Network = (typeof NETWORKS)[number];

export function isChain(value: string): value is Chain {
  return (CHAINS as readonly string[]).includes(value);
}
export function isEvmChain(value: string): value is EvmChain {
  return (EVM_CHAINS as readonly string[]).includes(value);
}
/** Parses a chain code case-insensitively; undefined when unknown. */
export function parseChain(value: string): Chain | undefined {
  const upper = value.trim().toUpperCase();
  return isChain(upper) ? upper : undefined;
}

/** A route is payable when the source is any chain and, from SOLANA, the destination is EVM. */
export function isValidRoute(from: Chain, to: Chain): boolean {
  return from !== 'SOLANA' || isEvmChain(to);
}

type UsdcDeployment = {
  readonly chainId: number;
  readonly usdc: `0x${string}`;
  /** EIP-712 domain name fallback, used only when `name()` cannot be read over RPC. */
  readonly eip712Name: string;
  readonly eip712Version: string;
};

/** USDC per EVM chain and network. */
export const USDC_EVM: Readonly<Record<Network, Readonly<Record<EvmChain, UsdcDeployment>>>> = {
  mainnet: {
    ETH: {
      chainId: 1,
      usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
      eip712Name: 'USD Coin',
      eip712Version: '2',
    },
    BASE: {
      chainId: 8453,
      usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      eip712Name: 'USD Coin',
      eip712Version: '2',
    },
    ARB: {
      chainId: 42161,
      usdc: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831',
      eip712Name: 'USD Coin',
      eip712Version: '2',
    },
    POLYGON: {
      chainId: 137,
      usdc: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359',
      eip712Name: 'USD Coin',
      eip712Version: '2',
    },
  },
  testnet: {
    ETH: {
      chainId: 11155111,
      usdc: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238',
      eip712Name: 'USDC',
      eip712Version: '2',
    },
    BASE: {
      chainId: 84532,
      usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      eip712Name: 'USDC',
      eip712Version: '2',
    },
    ARB: {
      chainId: 421614,
      usdc: '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d',
      eip712Name: 'USDC',
      eip712Version: '2',
    },
    POLYGON: {
      chainId: 80002,
      usdc: '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582',
      eip712Name: 'USDC',
      eip712Version: '2',
    },
  },
};

export const SOLANA_USDC_MINT: Readonly<Record<Network, string>> = {
  mainnet: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  testnet: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
};

/** Circle CCTP domain ids of the destination chains. */
export const CCTP_DOMAIN: Readonly<Record<Chain, number>> = {
  ETH: 0,
  ARB: 3,
  SOLANA: 5,
  BASE: 6,
  POLYGON: 7,
};

export const CCTP_PROGRAMS = {
  tokenMessengerMinterV1: 'CCTPiPYPc6AsJuwueEnWgSgucamXDZwBd53dQ11YiKX3',
  tokenMessengerMinterV2: 'CCTPV2vPZJS2u2BBsUoscuikbYjnpFmbFsvVuJdgUMQe',
  messageTransmitterV1: 'CCTPmbSD7gX1bxKPAmg77w8oFzNFpaQiQUWD43TKaecd',
  messageTransmitterV2: 'CCTPV2Sm4AdWt5296sk4P66VBZ7bEhcARwFaaS9YPbeC',
} as const;
