import { parentPort } from 'node:worker_threads';
import { checkEvmAddress, checkSolanaAddress } from '../domain/addresses.ts';

/**
 * Worker side of `createAddressChecker` (address-checker.ts): checks the recipients of a batch of
 * rows — the EIP-55 keccak and the base58 decoding are most of a row's validation — while the main
 * thread parses and validates the rest of the file.
 */
export type AddressCheckRequest = {
  readonly id: number;
  /** 1 where `texts[i]` is to be an EVM address, 0 for Solana. */
  readonly evm: Uint8Array;
  readonly texts: readonly string[];
};

parentPort?.on('message', (request: AddressCheckRequest) => {
  const checks = request.texts.map((text, i) =>
    request.evm[i] === 1 ? checkEvmAddress(text) : checkSolanaAddress(text),
  );
  parentPort?.postMessage({ id: request.id, checks });
});
