import { AddressSet, type ScreenedKind } from '../../domain/address-set.ts';

/** How a list file is written (docs/screening.md). */
export type ListFormat = 'ofac-advanced' | 'ofac-classic' | 'plain';

/** What a list file says: its addresses (domain/address-set.ts) and its date of issue. */
export type ParsedList = {
  readonly format: ListFormat;
  /** The date of issue (ms, UTC day start); undefined when the file states none. */
  readonly issuedAt: number | undefined;
  /** The EVM- and Solana-shaped addresses (EVM compared without regard to case). */
  readonly keys: AddressSet;
  /** Addresses listed, by kind (an address listed under two assets counts once). */
  readonly counts: Readonly<Record<ScreenedKind, number>>;
};

/** Gathers a list's addresses as a parser finds them (`expectedEvm`: AddressSet's size hint). */
export function createAddressCollector(expectedEvm = 0) {
  const keys = new AddressSet(expectedEvm);
  // Addresses of other chains (Bitcoin, Tron…) can never be a recipient: only counted, once each.
  const others = new Set<string>();
  const counts: Record<ScreenedKind, number> = { evm: 0, solana: 0, other: 0 };
  return {
    add(text: string): void {
      const address = text.trim();
      if (address === '') return;
      const { kind, added } = keys.add(address);
      if (kind === 'other') {
        if (!others.has(address)) counts.other++;
        others.add(address);
      } else if (added) counts[kind]++;
    },
    /**
     * Adds the line `text[start, end)` when its bytes are exactly an EVM address (what `add` would
     * do with its text); false, nothing done, when they are anything else.
     */
    addEvmText(text: Uint8Array, start: number, end: number): boolean {
      const added = keys.addEvmText(text, start, end);
      if (added === undefined) return false;
      if (added) counts.evm++;
      return true;
    },
    finish(format: ListFormat, issuedAt: number | undefined): ParsedList {
      return { format, issuedAt, keys, counts };
    },
  };
}
