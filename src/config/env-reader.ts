/** Typed reads of the environment (and `.env`): each malformed value becomes a problem naming its variable. */
import { readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { checkEvmAddress } from '../domain/addresses.ts';
import { tryParseUsdc } from '../domain/money.ts';

/** The environment's variables, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads `.env` from `cwd` (when present) under the process environment: variables already set in
 * the environment win, as dotenv does.
 */
export function readEnv(processEnv: Env = process.env, cwd: string = process.cwd()): Env {
  let fromFile: Record<string, string> = {};
  try {
    fromFile = parseDotenv(readFileSync(`${cwd}/.env`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return { ...fromFile, ...processEnv };
}

/**
 * What no client can use in a URL that parses (the message never quotes it: it may hold a
 * password): no host (ioredis would quietly go to 127.0.0.1:6379), or a user name or password whose
 * %-escapes do not decode (ioredis and the RPC reader decode them: "URI malformed").
 */
function urlProblem(u: URL): string | undefined {
  if (u.host === '') return 'must name a host';
  try {
    decodeURIComponent(u.username);
    decodeURIComponent(u.password);
  } catch {
    return 'has a malformed %-escape in its user name or password (write % as %25)';
  }
  return undefined;
}

/** Records a problem with a variable; `missing` when a required one is not set at all. */
export type Problem = (variable: string, message: string, missing?: boolean) => void;

/** Typed reads of the environment; each malformed value is reported (as a problem) and ignored. */
export type EnvReader = ReturnType<typeof createEnvReader>;

export function createEnvReader(env: Env, problem: Problem) {
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  return {
    str,
    /** A URL of one of `protocols` that a client can use; `rule` may refuse more (a message). */
    url(name: string, protocols: string[], rule?: (u: URL) => string | undefined): string | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      try {
        const u = new URL(v);
        if (!protocols.includes(u.protocol)) {
          problem(name, `must be a ${protocols.join(' or ')} URL`);
          return undefined;
        }
        const unusable = urlProblem(u) ?? rule?.(u);
        if (unusable !== undefined) {
          problem(name, unusable);
          return undefined;
        }
        return v.replace(/\/+$/, '');
      } catch {
        problem(name, 'is not a valid URL');
        return undefined;
      }
    },
    int(name: string, def: number, min: number, max: number): number {
      const v = str(name);
      if (v === undefined) return def;
      if (!/^-?[0-9]+$/.test(v) || Number(v) < min || Number(v) > max) {
        problem(name, `must be a whole number from ${min} to ${max} (got "${v.slice(0, 20)}")`);
        return def;
      }
      return Number(v);
    },
    usdc(name: string, { allowZero = false } = {}): bigint | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      const r = tryParseUsdc(v, { allowZero });
      if (!r.ok) problem(name, `must be a USDC amount: it ${r.reason}`);
      return r.ok ? r.value : undefined;
    },
    bool(name: string): boolean {
      const v = str(name)?.toLowerCase();
      if (v === undefined) return false;
      if (['true', '1', 'yes'].includes(v)) return true;
      if (['false', '0', 'no'].includes(v)) return false;
      problem(name, 'must be true or false');
      return false;
    },
    address(name: string): string | undefined {
      const v = str(name);
      if (v === undefined) return undefined;
      const r = checkEvmAddress(v);
      if (!r.ok) problem(name, `${r.reason}`);
      return r.ok ? r.value : undefined;
    },
    list(name: string): string[] | undefined {
      return str(name)
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    },
  };
}
