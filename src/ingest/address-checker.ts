import { Worker } from 'node:worker_threads';
import type { AddressCheck } from '../domain/addresses.ts';
import type { AddressCheckRequest } from './address-check-worker.ts';

export type AddressToCheck = { readonly evm: boolean; readonly text: string };

/** Checks addresses on a worker thread; `check` rejects once the worker has failed. */
export type AddressChecker = {
  check(addresses: readonly AddressToCheck[]): Promise<AddressCheck[]>;
  close(): Promise<void>;
};

/**
 * A checker on its own worker thread. When no worker can be started, every `check` rejects and the
 * caller checks the addresses itself.
 */
export function createAddressChecker(): AddressChecker {
  let worker: Worker;
  try {
    worker = new Worker(new URL('./address-check-worker.ts', import.meta.url), {
      // The thread prints its own warnings: Node 22's type stripping would add a notice to stderr.
      execArgv: [...process.execArgv, '--disable-warning=ExperimentalWarning'],
    });
  } catch (err) {
    const failure = err instanceof Error ? err : new Error(String(err));
    return { check: () => Promise.reject(failure), close: async () => {} };
  }
  const waiting = new Map<number, { resolve: (c: AddressCheck[]) => void; reject: (e: Error) => void }>();
  let failure: Error | undefined;
  let nextId = 0;
  const fail = (err: Error) => {
    failure ??= err;
    for (const w of waiting.values()) w.reject(failure);
    waiting.clear();
  };
  worker.on('message', (reply: { id: number; checks: AddressCheck[] }) => {
    const w = waiting.get(reply.id);
    waiting.delete(reply.id);
    w?.resolve(reply.checks);
  });
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`address check worker exited (${code})`)));
  return {
    check(addresses) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const request: AddressCheckRequest = {
        id,
        evm: Uint8Array.from(addresses, (a) => (a.evm ? 1 : 0)),
        texts: addresses.map((a) => a.text),
      };
      return new Promise<AddressCheck[]>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage(request);
      });
    },
    async close() {
      failure ??= new Error('address checker closed');
      await worker.terminate();
    },
  };
}
