import { screenedKind, screeningKey, type ScreenedKind } from '../../domain/screened-address.ts';

/** How a list file is written (docs/screening.md). */
export type ListFormat = 'ofac-advanced' | 'ofac-classic' | 'plain';

/** What a list file says: its addresses (as compared, screened-address.ts) and its date of issue. */
export type ParsedList = {
  readonly format: ListFormat;
  /** The date of issue (ms, UTC day start); undefined when the file states none. */
  readonly issuedAt: number | undefined;
  /** The EVM- and Solana-shaped addresses, as screening keys. */
  readonly keys: ReadonlySet<string>;
  /** Addresses listed, by kind (an address listed under two assets counts once). */
  readonly counts: Readonly<Record<ScreenedKind, number>>;
};

/** Gathers a list's addresses as a parser finds them. */
export function createAddressCollector() {
  const keys = new Set<string>();
  const others = new Set<string>();
  const counts: Record<ScreenedKind, number> = { evm: 0, solana: 0, other: 0 };
  return {
    add(text: string): void {
      const address = text.trim();
      if (address === '') return;
      const kind = screenedKind(address);
      if (kind === 'other') {
        if (!others.has(address)) counts.other++;
        others.add(address);
        return;
      }
      const key = screeningKey(address);
      if (keys.has(key)) return;
      keys.add(key);
      counts[kind]++;
    },
    finish(format: ListFormat, issuedAt: number | undefined): ParsedList {
      return { format, issuedAt, keys, counts };
    },
  };
}
