import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, writeSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { auditLine, GENESIS_HASH } from '../domain/audit-chain.ts';
import { UsdcBatchError } from '../domain/errors.ts';
import { keys } from './keys.ts';
import { releaseTokenLock } from './token-lock.ts';

/*
 * AUDIT_LOG_FILE (docs/audit.md): every audit entry is also appended to the file as one line of
 * a hash chain (src/domain/audit-chain.ts), written and fsynced before the action it records is
 * acknowledged. Every process that records entries (the CLI, `serve`, a worker firing schedules)
 * appends to its AUDIT_LOG_FILE; processes sharing one file take turns under a lock in Redis, named
 * by the file's device and inode (so two paths to one file — a bind mount — share it): each reads
 * the hash of the file's last line and appends the next one. A lock whose holder died expires.
 */

/** An append that could not be made: the action it records was done, but it is not acknowledged. */
export class AuditFileError extends UsdcBatchError {
  override name = 'AuditFileError';
}

/** How long a holder may keep the lock (one read of the tail, one write, one fsync). */
const LOCK_TTL_MS = 10_000;
/** How long an append waits for the lock before it fails. */
const LOCK_WAIT_MS = 15_000;
/** The most of the file's end read to find its last line: a line is far shorter. */
const TAIL_BYTES = 64 * 1024;

/**
 * The hash of the last line this process appended, per file: what a short-lived process (the CLI)
 * logs when it stops, as an anchor for `audit --verify --head` (audit-head.ts).
 */
const appended = new Map<string, string>();

/** The files this process appended to, each with the hash of its own last line there. */
export function appendedHeads(): ReadonlyMap<string, string> {
  return appended;
}

/**
 * The hash of the file's last line now (GENESIS_HASH for an empty file); undefined when the file
 * does not exist yet. Throws an AuditFileError when it cannot be read or does not end in a line of
 * the chain.
 */
export function readAuditHead(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw failed(file, `cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`, err);
  }
  try {
    return lastHash(fd, file);
  } finally {
    closeSync(fd);
  }
}

/** Appends one entry (its fields; `prev` and `hash` are added) to the file, fsynced. */
export async function appendAuditLine(
  redis: Redis,
  prefix: string,
  file: string,
  fields: Readonly<Record<string, unknown>>,
): Promise<void> {
  let fd: number;
  try {
    // O_APPEND: every write lands at the end, whatever else has the file open.
    fd = openSync(file, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, 0o600);
  } catch (err) {
    throw failed(file, `cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`, err);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw failed(file, 'is not a regular file');
    const lock = `${keys(prefix).auditFileLock}:${createHash('sha256').update(`${st.dev}:${st.ino}`).digest('hex').slice(0, 32)}`;
    const token = randomBytes(12).toString('base64url');
    await takeLock(redis, lock, token, file);
    try {
      const prev = lastHash(fd, file);
      const line = `${auditLine(fields, prev)}\n`;
      writeAll(fd, Buffer.from(line, 'utf8'), file);
      fsyncSync(fd);
      appended.set(file, (JSON.parse(line) as { hash: string }).hash);
    } finally {
      await releaseTokenLock(redis, lock, token).catch(() => undefined);
    }
  } catch (err) {
    throw err instanceof AuditFileError
      ? err
      : failed(file, `cannot be written (${(err as Error).message})`, err);
  } finally {
    closeSync(fd);
  }
}

function failed(file: string, what: string, cause?: unknown): AuditFileError {
  return new AuditFileError(
    'USDC_AUDIT_FILE',
    `AUDIT_LOG_FILE ${file} ${what}: the action was done and is in the audit stream, but not in the file`,
    { cause },
  );
}

async function takeLock(redis: Redis, lock: string, token: string, file: string): Promise<void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let wait = 5; ; wait = Math.min(wait * 2, 200)) {
    if ((await redis.set(lock, token, 'PX', LOCK_TTL_MS, 'NX')) === 'OK') return;
    if (Date.now() > deadline)
      throw failed(file, `is being written by another process for over ${LOCK_WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, wait));
  }
}

/**
 * The `hash` of the file's last line (GENESIS_HASH for an empty file). A file that does not end in
 * a line of the chain — a line cut short, something else appended — is not written to: the chain
 * would hide where it broke. `audit --verify` names the line.
 */
function lastHash(fd: number, file: string): string {
  const size = fstatSync(fd).size;
  if (size === 0) return GENESIS_HASH;
  const length = Math.min(size, TAIL_BYTES);
  const buffer = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, size - length + read);
    if (n === 0) break;
    read += n;
  }
  const text = buffer.toString('utf8', 0, read);
  if (!text.endsWith('\n'))
    throw failed(file, 'does not end with a whole line (check it: usdc-batch audit --verify)');
  const last = text.slice(0, -1).split('\n').pop() ?? '';
  try {
    const hash = (JSON.parse(last) as { hash?: unknown }).hash;
    if (typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash)) return hash;
  } catch {
    // not a line of the chain: refused below
  }
  throw failed(file, 'ends with a line that is not an audit line (check it: usdc-batch audit --verify)');
}

function writeAll(fd: number, data: Buffer, file: string): void {
  let written = 0;
  while (written < data.length) {
    const n = writeSync(fd, data, written, data.length - written);
    if (n <= 0) throw failed(file, 'took no bytes');
    written += n;
  }
}
