import { timingSafeEqual } from 'node:crypto';
import { tokenDigest, type Credential } from '../domain/access.ts';

/**
 * The credentials `serve` accepts now (docs/access.md): ACCESS_FILE's, replaced as a whole when a
 * SIGHUP re-reads a good file (serve.ts), or the three tokens'.
 */
export type AccessList = {
  current(): readonly Credential[];
  replace(credentials: readonly Credential[]): void;
};

export function createAccessList(initial: readonly Credential[]): AccessList {
  let credentials = initial;
  return {
    current: () => credentials,
    replace(next) {
      credentials = next;
    },
  };
}

/**
 * The credential whose token this is, or undefined. The token is hashed and compared with every
 * credential's digest in constant time, all of them each time: how long it takes says nothing of
 * which one matched, nor how much of a digest did.
 */
export function credentialFor(list: AccessList, token: string): Credential | undefined {
  const presented = Buffer.from(tokenDigest(token), 'hex');
  let found: Credential | undefined;
  for (const c of list.current()) {
    if (timingSafeEqual(presented, Buffer.from(c.sha256, 'hex')) && !found) found = c;
  }
  return found;
}
