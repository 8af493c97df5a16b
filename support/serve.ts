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

/**
 * Spawns the real `usdc-batch serve` on a free port and waits until it listens. The port is free when
 * chosen, but a process of another test lane may take it before serve binds it: serve then refuses it
 * as in use (exit 2), and another port is tried, as support/redis.ts does for its servers.
 */
export async function startServe(env: Record<string, string>): Promise<ServeProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await serveOn(env, port);
    } catch (err) {
      if (attempt >= 3 || !/HTTP_PORT: port \d+ on .* is already in use/.test(String(err))) throw err;
    }
  }
}

async function serveOn(env: Record<string, string>, port: number): Promise<ServeProcess> {
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
