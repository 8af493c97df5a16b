/*
 * Keys stay in the worker (docs/keys.md): the configuration reads key settings
 * only when the command gives it a SigningKeyReader (`worker`, `demo`; src/signing/evm/keystore.ts
 * has the one there is). The cryptography it needs — opening a V3 keystore, deriving an EVM
 * address — lives in src/signing, which imports viem and ox; config imports neither.
 */

/** A keystore opened with its password: its private key and address, or why it did not open. */
export type KeystoreOpening =
  | { readonly ok: true; readonly privateKey: string; readonly address: string }
  | { readonly ok: false; readonly reason: string };

export type SigningKeyReader = {
  /**
   * Opens the V3 keystore `text` with `password`. Refuses, before any key derivation runs, a
   * keystore asking for one costlier than four times geth's standard.
   */
  openKeystore(text: string, password: string): KeystoreOpening;
  /** The EIP-55 checksummed address of a 32-byte hex private key. */
  evmAddressOf(privateKey: string): string;
};
