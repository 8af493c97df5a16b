import { encodeFunctionData, parseAbi, type Hex } from 'viem';
import { MESSAGE_TRANSMITTER_V2_ABI, TOKEN_MESSENGER_V2_ABI } from './cctp-abi.ts';

/*
 * The calldata of the CCTP road's owner transactions (docs/cctp.md "The flow"), in Circle's ABIs:
 * the bounded USDC approve to TokenMessengerV2, `depositForBurn`, `receiveMessage`.
 */

const APPROVE_ABI = parseAbi(['function approve(address spender, uint256 value) returns (bool)']);

/** `approve(spender, amount)` on USDC: never more than asked (no unlimited allowance). */
export function approveData(spender: string, amount: bigint): string {
  return encodeFunctionData({ abi: APPROVE_ABI, functionName: 'approve', args: [spender as Hex, amount] });
}

export type BurnArgs = {
  readonly amount: bigint;
  readonly destinationDomain: number;
  /** bytes32. */
  readonly mintRecipient: string;
  readonly burnToken: string;
  /** bytes32 (zero: anyone may mint). */
  readonly destinationCaller: string;
  readonly maxFee: bigint;
  readonly minFinalityThreshold: number;
};

export function depositForBurnData(b: BurnArgs): string {
  return encodeFunctionData({
    abi: TOKEN_MESSENGER_V2_ABI,
    functionName: 'depositForBurn',
    args: [
      b.amount,
      b.destinationDomain,
      b.mintRecipient as Hex,
      b.burnToken as Hex,
      b.destinationCaller as Hex,
      b.maxFee,
      b.minFinalityThreshold,
    ],
  });
}

export function receiveMessageData(message: string, attestation: string): string {
  return encodeFunctionData({
    abi: MESSAGE_TRANSMITTER_V2_ABI,
    functionName: 'receiveMessage',
    args: [message as Hex, attestation as Hex],
  });
}
