import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a validation loop may run before it lets the rest of the process have a turn. */
const DEFAULT_BUDGET_MS = 20;

/**
 * A long synchronous loop (validating a large file) would hold the event loop: `serve` could answer
 * nothing else, not even /healthz, until it ends. A loop asks `due()` per step (a clock read, no
 * await) and, when its budget is spent, awaits `pause()`: one macrotask turn, so pending I/O,
 * timers and other requests run before it goes on.
 */
export function createEventLoopTurn(budgetMs: number = DEFAULT_BUDGET_MS) {
  let since = performance.now();
  return {
    due: (): boolean => performance.now() - since >= budgetMs,
    async pause(): Promise<void> {
      await nextTurn();
      since = performance.now();
    },
  };
}
