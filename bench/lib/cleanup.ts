import type { ChildProcess } from 'node:child_process';

/**
 * Everything the bench starts registers how to stop it here, so that a failed section, an
 * exception or Ctrl-C still leaves no redis-server, sandbox or worker behind.
 */
type Cleanup = () => Promise<void>;

const cleanups = new Set<Cleanup>();
const children = new Set<ChildProcess>();

/** Registers `fn`; returns a function that runs it once and unregisters it. */
export function onCleanup(fn: Cleanup): () => Promise<void> {
  let done = false;
  const once: Cleanup = async () => {
    if (done) return;
    done = true;
    cleanups.delete(once);
    await fn();
  };
  cleanups.add(once);
  return once;
}

/** A child that must be SIGKILLed if the bench exits without stopping it. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export async function cleanupAll(): Promise<void> {
  // Latest first: workers before the sandbox and Redis they use.
  for (const fn of [...cleanups].reverse()) {
    await fn().catch(() => {});
  }
  for (const child of children) child.kill('SIGKILL');
}

// Last resort on a synchronous exit: nothing async can run, so kill what is still alive.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
