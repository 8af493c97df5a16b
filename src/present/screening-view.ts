import { listAgeSeconds, type ScreeningState } from '../store/screening-state.ts';

/** The status document's `screening` (docs/screening.md): the lists the workers screen with. */
export type ScreeningView = {
  lists: { name: string; date: string; addresses: number }[];
  stale: boolean;
  onchain: boolean;
};

/** As the status document shows it; no worker published yet: no lists, not stale, on-chain off. */
export function screeningView(state: ScreeningState | null, now: number): ScreeningView {
  if (!state) return { lists: [], stale: false, onchain: false };
  const age = listAgeSeconds(state, now);
  return {
    lists: state.lists.map((l) => ({ name: l.name, date: l.date, addresses: l.evm + l.solana + l.other })),
    stale: age !== null && age * 1000 > state.maxAgeMs,
    onchain: state.onchain,
  };
}
