import { spawnCli, waitFor, type SpawnedProcess } from './cli.ts';
import { freePort } from './redis.ts';

export type ServeProcess = {
  readonly url: string;
  readonly process: SpawnedProcess;
  /**
   * fetch against the API with the given bearer token (none when undefined); given up after
   * `timeoutMs` (15 s: a bound on a hung test, not a measure of speed, which the bench takes).
   */
  call(
    path: string,
    init?: RequestInit & { token?: string | undefined; timeoutMs?: number | undefined },
  ): Promise<Response>;
  stop(): Promise<void>;
};

/** Spawns the real `usdc-batch serve` on a free port and waits until it listens. */
export async function startServe(env: Record<string, string>): Promise<ServeProcess> {
  const port = await freePort();
  const proc = spawnCli(['serve'], { ...env, HTTP_PORT: String(port) });
  try {
    await waitFor(
      'usdc-batch serve to listen',
      async () => {
        if (proc.child.exitCode !== null)
          throw new Error(`serve exited ${proc.child.exitCode}: ${proc.output()}`);
        return proc.output().includes('listening on');
      },
      // Generous: a busy machine can take many seconds to start serve; an exit ends the wait at once.
      { timeoutMs: 50_000, intervalMs: 100 },
    );
  } catch (err) {
    await proc.stop(5_000);
    throw err;
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    process: proc,
    async call(path, init = {}) {
      const { token, headers, timeoutMs = 15_000, ...rest } = init;
      return await fetch(`${url}${path}`, {
        ...rest,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(headers as Record<string, string>),
        },
        signal: AbortSignal.timeout(timeoutMs),
      });
    },
    async stop() {
      await proc.stop(10_000);
    },
  };
}
