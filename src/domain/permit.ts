/**
 * An EIP-2612 permit as the transfer service takes it (`permit` of `POST /sdk/v1/transfer`):
 * signed by the signing layer, saved in the transfer record (docs/data-model.md), re-sent
 * identically until it is proven dead. Numbers are decimal strings, exactly as sent.
 */
export type PermitPayload = {
  readonly owner: string;
  readonly spender: string;
  readonly value: string;
  readonly nonce: string;
  readonly deadline: string;
  readonly signature: string;
  readonly v: number;
  readonly r: string;
  readonly s: string;
};
