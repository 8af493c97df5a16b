/**
 * The roads a transfer can take (docs/cctp.md): the transfer service, or Circle's CCTP
 * v2 directly, Standard (`cctp`, finality threshold 2000) or Fast (`cctp-fast`, threshold 1000).
 */
export const TRANSFER_ROADS = ['service', 'cctp', 'cctp-fast'] as const;
export type TransferRoad = (typeof TRANSFER_ROADS)[number];

export function isTransferRoad(value: string): value is TransferRoad {
  return (TRANSFER_ROADS as readonly string[]).includes(value);
}
