import {
  decodeAbiParameters,
  encodeDeployData,
  keccak256,
  toHex as viemToHex,
  type Abi,
  type Hex,
} from 'viem';
import { CCTP_DOMAIN, CCTP_V2_CONTRACTS } from '../../domain/cctp.ts';
import { EVM_CHAINS, type EvmChain, type Network } from '../../domain/chains.ts';
import { anvilCall } from './anvil-rpc.ts';
import artifact from './SandboxCctp.json' with { type: 'json' };

/** One `MessageSent` of a transaction: the message as the source chain emitted it (nonce still zero). */
export type SentMessage = { readonly logIndex: number; readonly message: Hex };

/** The transaction's receipt as the attestation service reads it: null when the chain has none yet. */
export type SentMessages = {
  readonly blockNumber: bigint;
  readonly status: 'success' | 'reverted';
  readonly messages: readonly SentMessage[];
};

const MESSAGE_SENT_TOPIC = keccak256(viemToHex('MessageSent(bytes)'));

/** Where the sandbox's CCTP contracts live on `chain`: Circle's testnet addresses (the sandbox runs testnet chain ids). */
export function sandboxCctpAddresses(network: Network, chain: EvmChain) {
  return CCTP_V2_CONTRACTS[network][chain];
}

/** Bit d set for every domain of the sandbox's EVM chains but `local`. */
function remoteDomainBits(local: EvmChain): bigint {
  return EVM_CHAINS.filter((c) => c !== local).reduce((bits, c) => bits | (1n << BigInt(CCTP_DOMAIN[c])), 0n);
}

/**
 * Places the runtime code of the sandbox's MessageTransmitterV2 and TokenMessengerV2 at Circle's
 * addresses, as installToken does USDC: the creation code run by eth_call returns the code with its
 * immutables (domain, attester, USDC, fee recipient, the other chains' domains).
 */
export async function installCctp(
  url: string,
  p: {
    chain: EvmChain;
    network: Network;
    usdc: Hex;
    attester: Hex;
    feeRecipient: Hex;
    deployer: Hex;
  },
): Promise<void> {
  const at = sandboxCctpAddresses(p.network, p.chain);
  const transmitterCode = await runtimeCode(url, p.deployer, {
    abi: artifact.transmitter.abi as Abi,
    bytecode: artifact.transmitter.bytecode as Hex,
    args: [CCTP_DOMAIN[p.chain], p.attester],
  });
  const messengerCode = await runtimeCode(url, p.deployer, {
    abi: artifact.messenger.abi as Abi,
    bytecode: artifact.messenger.bytecode as Hex,
    args: [at.messageTransmitter, p.usdc, p.feeRecipient, remoteDomainBits(p.chain)],
  });
  await anvilCall(url, 'anvil_setCode', [at.messageTransmitter, transmitterCode]);
  await anvilCall(url, 'anvil_setCode', [at.tokenMessenger, messengerCode]);
}

async function runtimeCode(
  url: string,
  from: Hex,
  c: { abi: Abi; bytecode: Hex; args: readonly unknown[] },
): Promise<Hex> {
  const data = encodeDeployData({ abi: c.abi, bytecode: c.bytecode, args: c.args });
  return await anvilCall<Hex>(url, 'eth_call', [{ from, data, gas: '0x1c9c380' }, 'latest']);
}

type RawReceipt = {
  status: string;
  blockNumber: Hex;
  logs: { address: string; topics: string[]; data: Hex; logIndex: Hex }[];
};

/** The `MessageSent` logs of the transmitter in `txHash`'s receipt, in log order; null when there is no receipt. */
export async function readSentMessages(
  url: string,
  transmitter: string,
  txHash: string,
): Promise<SentMessages | null> {
  const receipt = await anvilCall<RawReceipt | null>(url, 'eth_getTransactionReceipt', [txHash]);
  if (!receipt) return null;
  const messages = receipt.logs
    .filter(
      (l) => l.address.toLowerCase() === transmitter.toLowerCase() && l.topics[0] === MESSAGE_SENT_TOPIC,
    )
    .map((l) => ({
      logIndex: Number(BigInt(l.logIndex)),
      message: decodeAbiParameters([{ type: 'bytes' }], l.data)[0],
    }));
  return {
    blockNumber: BigInt(receipt.blockNumber),
    status: receipt.status === '0x1' ? 'success' : 'reverted',
    messages,
  };
}
