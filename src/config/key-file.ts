import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';

/*
 * Key, keystore and password files as the worker reads them (docs/keys.md):
 * regular files of at most 64 KiB. Anything else is refused before a byte is read, so that
 * `/dev/zero` cannot grow the process without bound and a FIFO cannot hang it: the path is stat'ed
 * first (a FIFO, a device or a directory is never opened), then opened non-blocking and fstat'ed
 * again (it may have been swapped in between), and at most 64 KiB + 1 bytes are read.
 */

/** The most a key, keystore or password file may hold. */
export const MAX_KEY_FILE_BYTES = 64 * 1024;

export type KeyFileText =
  | { readonly ok: true; readonly text: string; readonly mode: number }
  | { readonly ok: false; readonly reason: string };

const tooLarge = (what: string) => `is larger than 64 KiB, too large for ${what}`;

/** What a file that is not a regular one is, in words; undefined for a regular file. */
function otherKind(st: Stats): string | undefined {
  if (st.isFile()) return undefined;
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Why `st` is not a key file (not regular, or too large); undefined when it may be one. */
function refusal(st: Stats, what: string): string | undefined {
  const kind = otherKind(st);
  if (kind !== undefined) return `is ${kind}, not a regular file`;
  if (st.size > MAX_KEY_FILE_BYTES) return tooLarge(what);
  return undefined;
}

const unreadable = (err: unknown) => `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;

/**
 * The text (UTF-8) of a key, keystore or password file and its mode bits, or why it is not one:
 * `cannot be read (ENOENT)`, `is a FIFO (named pipe), not a regular file`, `is larger than 64 KiB…`.
 * The reason never holds a byte of the file.
 */
export function readKeyFile(file: string, what = 'a key or password file'): KeyFileText {
  let st: Stats;
  try {
    st = statSync(file);
  } catch (err) {
    return { ok: false, reason: unreadable(err) };
  }
  const before = refusal(st, what);
  if (before !== undefined) return { ok: false, reason: before };
  let fd: number;
  try {
    // O_NONBLOCK: should a FIFO be swapped in after the stat, opening it does not wait for a writer.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    return { ok: false, reason: unreadable(err) };
  }
  const buffer = Buffer.alloc(MAX_KEY_FILE_BYTES + 1);
  try {
    const opened = fstatSync(fd);
    const swapped = refusal(opened, what);
    if (swapped !== undefined) return { ok: false, reason: swapped };
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    // It grew after the fstat: still no more than 64 KiB + 1 bytes were read.
    if (length > MAX_KEY_FILE_BYTES) return { ok: false, reason: tooLarge(what) };
    return { ok: true, text: buffer.toString('utf8', 0, length), mode: opened.mode };
  } catch (err) {
    return { ok: false, reason: unreadable(err) };
  } finally {
    buffer.fill(0);
    closeSync(fd);
  }
}
