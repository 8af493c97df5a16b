import { createRequire } from 'node:module';
import type * as SandboxModule from '../sandbox/sandbox.ts';

/*
 * The sandbox's chains come from optional dependencies (package.json `optionalDependencies`): the
 * production install (`npm ci --omit=dev --omit=optional`, the Docker image) leaves them out, so a
 * worker's image carries no anvil binary and no LiteSVM. `usdc-batch sandbox` and `demo` check for
 * them before loading the sandbox (which imports them), and say the one command that adds them.
 */

/** The packages the sandbox's chains need: anvil (EVM chains) and LiteSVM (Solana). */
export const SANDBOX_PACKAGES = ['@foundry-rs/anvil', 'litesvm'] as const;

/** The one command that adds them to an install that left them out. */
export const ADD_SANDBOX_PACKAGES = 'npm ci --include=optional';

/** Whether `name` can be found from this project (throws when it cannot). */
export type PackageResolver = (name: string) => unknown;

const projectRequire = createRequire(import.meta.url);

function resolvePackage(name: string): unknown {
  return projectRequire.resolve(`${name}/package.json`);
}

/** The sandbox packages this install lacks (empty when all are here). */
export function missingSandboxPackages(resolve: PackageResolver = resolvePackage): string[] {
  return SANDBOX_PACKAGES.filter((name) => {
    try {
      resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/** What `command` says (before exiting 2) on an install without the sandbox's packages. */
export function missingSandboxMessage(command: string, missing: readonly string[]): string {
  return (
    `error: usdc-batch ${command} needs the sandbox's local chains (${missing.join(', ')}), ` +
    'which this install left out (a production install, npm ci --omit=optional, does). ' +
    `Add them with: ${ADD_SANDBOX_PACKAGES}`
  );
}

/**
 * The sandbox module, loaded only once its packages are known to be here; `undefined` (after
 * printing what to run) when they are not. Nothing outside src/sandbox imports it statically.
 */
export async function loadSandboxModule(
  command: string,
  resolve: PackageResolver = resolvePackage,
): Promise<typeof SandboxModule | undefined> {
  const missing = missingSandboxPackages(resolve);
  if (missing.length > 0) {
    process.stderr.write(`${missingSandboxMessage(command, missing)}\n`);
    return undefined;
  }
  return await import('../sandbox/sandbox.ts');
}
