import type { Redis } from 'ioredis';
import type { AddressFamily, BookAddress } from '../domain/recipient-key.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';

/**
 * The address book of known recipients (docs/operating.md "Approvals and the address book", docs/configuration.md `NEW_RECIPIENT_POLICY`):
 * `P:recipients` (HASH: recipient key → entry JSON) and `P:recipients:removed` (HASH: recipient
 * key → tombstone JSON). A key is in at most one of them. A removed address stays a tombstone —
 * held every time it is paid — until someone adds it again explicitly; approving a batch never
 * brings it back. Lookups are one HMGET per thousand addresses on each hash.
 */
export type BookEntry = {
  readonly address: string;
  readonly family: AddressFamily;
  readonly label: string | null;
  readonly added_by: string;
  readonly added_at: number;
  /** `add`, `import`, or `approve:<batch id>` (added by approving a batch that paid it). */
  readonly via: string;
  /**
   * Who approved a batch paying it after it was added (`approve:<batch id>` in `vouched_via`):
   * once vouched for, it is known to every submitter, its adder too.
   */
  readonly vouched_by?: string | undefined;
  readonly vouched_via?: string | undefined;
};

export type RemovedEntry = {
  readonly address: string;
  readonly family: AddressFamily;
  readonly removed_by: string;
  readonly removed_at: number;
};

export type BookStatus =
  | {
      readonly status: 'known';
      /** Who added it (null for an entry that cannot be read). */
      readonly addedBy: string | null;
      /** Added or vouched for by an approval of a held batch (docs/access.md "Four eyes over the address book"). */
      readonly vouched: boolean;
    }
  | { readonly status: 'removed'; readonly removedAt: number }
  | { readonly status: 'new' };

const CHUNK = 1000;

/** Adds entries unless the address is in the book already or was removed: what approving a batch does. */
const ADD_UNLESS_REMOVED = luaScriptFile('recipients-add-unless-removed.lua');

/** Takes an address out of the book and leaves its tombstone. */
const REMOVE = luaScriptFile('recipient-remove.lua');

export type BookDeps = { readonly redis: Redis; readonly prefix: string; readonly now?: () => number };

/** The book's functions bound to their Redis. */
export function createRecipientBook(deps: BookDeps) {
  return {
    statuses: (recipientKeys: readonly string[]) => bookStatuses(deps, recipientKeys),
    add: (entries: Parameters<typeof addToBook>[1], actor: string, via: 'add' | 'import') =>
      addToBook(deps, entries, actor, via),
    addUnlessRemoved: (addresses: readonly BookAddress[], actor: string, via: string) =>
      addUnlessRemoved(deps, addresses, actor, via),
    remove: (address: BookAddress, actor: string) => removeFromBook(deps, address, actor),
    list: () => listBook(deps),
  };
}
export type RecipientBook = ReturnType<typeof createRecipientBook>;

function bookKeysOf(book: BookDeps): string[] {
  const k = keys(book.prefix);
  return [k.recipients, k.recipientsRemoved];
}

/** The book's word on each key (absent from both hashes: `new`). */
export async function bookStatuses(
  book: BookDeps,
  recipientKeys: readonly string[],
): Promise<Map<string, BookStatus>> {
  const { redis } = book;
  const k = keys(book.prefix);
  const unique = [...new Set(recipientKeys)];
  const out = new Map<string, BookStatus>();
  // An empty hash needs no lookups (no book yet, or nothing ever removed: the usual case).
  const [[, known], [, removed]] = (await redis
    .multi()
    .hlen(k.recipients)
    .hlen(k.recipientsRemoved)
    .exec()) as [[Error | null, number], [Error | null, number]];
  const hashes = [...(known > 0 ? [k.recipients] : []), ...(removed > 0 ? [k.recipientsRemoved] : [])];
  const chunks: string[][] = [];
  for (let i = 0; i < unique.length; i += CHUNK) chunks.push(unique.slice(i, i + CHUNK));
  // Every chunk goes out in one pipeline: one round trip for the whole file.
  const pipe = redis.pipeline();
  for (const chunk of chunks) for (const hash of hashes) pipe.hmget(hash, ...chunk);
  const res = hashes.length > 0 ? ((await pipe.exec()) ?? []) : [];
  chunks.forEach((chunk, c) => {
    const found = new Map<string, (string | null)[]>();
    hashes.forEach((hash, h) => {
      const [err, values] = res[c * hashes.length + h] ?? [null, []];
      if (err) throw err;
      found.set(hash, values as (string | null)[]);
    });
    const inBook = found.get(k.recipients);
    const tombs = found.get(k.recipientsRemoved);
    chunk.forEach((key, j) => {
      const tomb = tombs?.[j];
      const entry = inBook?.[j];
      if (entry) out.set(key, knownStatus(entry));
      else if (tomb) out.set(key, { status: 'removed', removedAt: removedAtOf(tomb) });
      else out.set(key, { status: 'new' });
    });
  });
  return out;
}
/** A book entry's status: who added it, and whether an approval vouched for it. */
function knownStatus(json: string): BookStatus {
  const e = parseEntry(json);
  const vouched = e !== undefined && (e.via.startsWith('approve:') || typeof e.vouched_by === 'string');
  return { status: 'known', addedBy: typeof e?.added_by === 'string' ? e.added_by : null, vouched };
}

/**
 * Explicit adds (`recipients add`/`import`, `POST /v1/recipients`): an address already in the book
 * keeps who added it and when, and takes the new label when one is given; a tombstone is cleared.
 * A thousand addresses per read and per write, all chunks in one pipeline each.
 */
export async function addToBook(
  book: BookDeps,
  entries: readonly { address: BookAddress; label?: string | undefined }[],
  actor: string,
  via: 'add' | 'import',
): Promise<{ added: number; updated: number; changed: number }> {
  const { redis } = book;
  const k = keys(book.prefix);
  const byKey = new Map(entries.map((e) => [e.address.key, e]));
  const all = [...byKey.values()];
  const read = redis.pipeline();
  for (let i = 0; i < all.length; i += CHUNK) {
    read.hmget(k.recipients, ...all.slice(i, i + CHUNK).map((e) => e.address.key));
  }
  const existing = ((await read.exec()) ?? []).flatMap(([err, v]) => {
    if (err) throw err;
    return v as (string | null)[];
  });
  const at = (book.now ?? Date.now)();
  let added = 0;
  // Entries that are new or whose label changed: an add that changes none changed nothing.
  let changed = 0;
  const write = redis.multi();
  for (let i = 0; i < all.length; i += CHUNK) {
    const pairs: string[] = [];
    const slice = all.slice(i, i + CHUNK);
    slice.forEach((e, j) => {
      const prev = parseEntry(existing[i + j] ?? null);
      if (!prev) added++;
      const label = e.label ? e.label : (prev?.label ?? null);
      if (!prev || prev.label !== label) changed++;
      const entry: BookEntry = prev
        ? { ...prev, label }
        : {
            address: e.address.address,
            family: e.address.family,
            label,
            added_by: actor,
            added_at: at,
            via,
          };
      pairs.push(e.address.key, JSON.stringify(entry));
    });
    write.hset(k.recipients, ...pairs);
    write.hdel(k.recipientsRemoved, ...slice.map((e) => e.address.key));
  }
  const res = (await write.exec()) ?? [];
  for (const [err] of res) if (err) throw err;
  return { added, updated: all.length - added, changed };
}
/**
 * What approving a batch adds: the addresses it paid that are neither known nor removed; an address
 * in the book that no approval vouched for yet (its batch's submitter added it) is marked vouched for.
 */
export async function addUnlessRemoved(
  book: BookDeps,
  addresses: readonly BookAddress[],
  actor: string,
  via: string,
): Promise<number> {
  const at = (book.now ?? Date.now)();
  const unique = [...new Map(addresses.map((a) => [a.key, a])).values()];
  let added = 0;
  for (let i = 0; i < unique.length; i += CHUNK) {
    const args: string[] = [];
    for (const a of unique.slice(i, i + CHUNK)) {
      const entry: BookEntry = {
        address: a.address,
        family: a.family,
        label: null,
        added_by: actor,
        added_at: at,
        via,
      };
      args.push(a.key, JSON.stringify(entry));
    }
    added += Number(await runScript(book.redis, ADD_UNLESS_REMOVED, bookKeysOf(book), args));
  }
  return added;
}
/** Removes an address (a tombstone is left even when it was not in the book). */
export async function removeFromBook(
  book: BookDeps,
  address: BookAddress,
  actor: string,
): Promise<{ existed: boolean }> {
  const tomb: RemovedEntry = {
    address: address.address,
    family: address.family,
    removed_by: actor,
    removed_at: (book.now ?? Date.now)(),
  };
  const prev = await runScript(book.redis, REMOVE, bookKeysOf(book), [address.key, JSON.stringify(tomb)]);
  return { existed: typeof prev === 'string' };
}
/** The book, oldest entries first (HSCAN: a large book is read in pieces, never blocking Redis). */
export async function listBook(book: BookDeps): Promise<BookEntry[]> {
  const k = keys(book.prefix);
  const out: BookEntry[] = [];
  let cursor = '0';
  do {
    const [next, flat] = await book.redis.hscan(k.recipients, cursor, 'COUNT', CHUNK);
    cursor = next;
    for (let i = 1; i < flat.length; i += 2) {
      const e = parseEntry(flat[i] ?? null);
      if (e) out.push(e);
    }
  } while (cursor !== '0');
  return out.sort((a, b) => a.added_at - b.added_at || a.address.localeCompare(b.address));
}
function parseEntry(json: string | null): BookEntry | undefined {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as BookEntry;
  } catch {
    return undefined;
  }
}

/** A tombstone's removal time; 0 when unreadable, so a damaged tombstone still counts as removed. */
export function removedAtOf(json: string): number {
  try {
    const at = (JSON.parse(json) as Partial<RemovedEntry>).removed_at;
    return typeof at === 'number' ? at : 0;
  } catch {
    return 0;
  }
}
