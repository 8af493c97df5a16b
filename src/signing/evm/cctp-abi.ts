import { parseAbi } from 'viem';

/**
 * The parts of Circle's CCTP v2 contracts the worker calls and reads, with the signatures Circle's
 * contracts declare (circlefin/evm-cctp-contracts `src/v2/TokenMessengerV2.sol`,
 * `src/v2/MessageTransmitterV2.sol`; their ABIs in `docs/abis/cctp/v2.1/`). The sandbox's
 * contracts (src/sandbox/evm/SandboxCctp.sol) declare the same, and a test holds them to this file;
 * against Circle's deployed contracts the worker runs unchanged (docs/sandbox.md "CCTP v2").
 */

/** TokenMessengerV2: the burn (`depositForBurn`, no hook) and the event it emits. */
export const TOKEN_MESSENGER_V2_ABI = parseAbi([
  'function depositForBurn(uint256 amount, uint32 destinationDomain, bytes32 mintRecipient, address burnToken, bytes32 destinationCaller, uint256 maxFee, uint32 minFinalityThreshold)',
  'function localMessageTransmitter() view returns (address)',
  'function messageBodyVersion() view returns (uint32)',
  'event DepositForBurn(address indexed burnToken, uint256 amount, address indexed depositor, bytes32 mintRecipient, uint32 destinationDomain, bytes32 destinationTokenMessenger, bytes32 destinationCaller, uint256 maxFee, uint32 indexed minFinalityThreshold, bytes hookData)',
]);

/** MessageTransmitterV2: the mint (`receiveMessage`), the nonce ledger, and the events. */
export const MESSAGE_TRANSMITTER_V2_ABI = parseAbi([
  'function receiveMessage(bytes message, bytes attestation) returns (bool success)',
  'function usedNonces(bytes32) view returns (uint256)',
  'function localDomain() view returns (uint32)',
  'function version() view returns (uint32)',
  'function signatureThreshold() view returns (uint256)',
  'function isEnabledAttester(address attester) view returns (bool)',
  'event MessageSent(bytes message)',
  'event MessageReceived(address indexed caller, uint32 sourceDomain, bytes32 indexed nonce, bytes32 sender, uint32 indexed finalityThresholdExecuted, bytes messageBody)',
]);

/** `usedNonces(nonce)` answers this once a message with that nonce was received (`NONCE_USED`). */
export const NONCE_USED = 1n;

/** The revert reason of a `receiveMessage` whose nonce was used: the message was minted already, by anyone. */
export const NONCE_ALREADY_USED = 'Nonce already used';

/** The revert reason of a mint after the message's `expirationBlock`: ask `POST /v2/reattest/{nonce}`. */
export const MESSAGE_EXPIRED = 'Message expired and must be re-signed';
