import type { Redis } from 'ioredis';
import { appendAuditLine } from './audit-file.ts';
import { keys } from './keys.ts';

/**
 * Operator actions (docs/audit.md): an append-only Redis stream, and with AUDIT_LOG_FILE a
 * hash-chained file too (audit-file.ts). An action that changed nothing is not recorded.
 */
export const AUDIT_ACTIONS = [
  'enqueue',
  'approve',
  'approve_refused',
  'retry',
  'resolve',
  'cancel',
  'pause',
  'resume',
  'schedule_add',
  'schedule_remove',
  'recipient_add',
  'recipient_remove',
  'recipient_import',
  'screening_refused',
] as const;
type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditEntry = {
  readonly id: string;
  readonly at: string;
  /**
   * Who: the HTTP credential's name, `cli:<name>` (USDC_BATCH_OPERATOR or the OS user),
   * `schedule:<name>` — never a token. Entries of older versions read `http:hook`, `http:approver`.
   */
  readonly who: string;
  readonly action: AuditAction;
  readonly batch: string | null;
  /** What was done, as an object (`{ "requeued": 3 }`); entries of older versions read `{ "message": … }`. */
  readonly detail: AuditDetail;
};

type AuditDetail = Readonly<Record<string, unknown>>;

// A year of a busy operator's actions is far below this; the stream is trimmed only beyond it.
const MAX_ENTRIES = 1_000_000;

/** Where entries go: the stream in Redis, and AUDIT_LOG_FILE when set. */
export type AuditDeps = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly auditLogFile?: string | undefined;
};

/**
 * Records an action: in the stream, then — with AUDIT_LOG_FILE — in the file, written and fsynced
 * before this returns, so before the action is acknowledged (it throws an AuditFileError when the
 * file cannot be written: the action is then not acknowledged).
 */
export async function recordAudit(
  deps: AuditDeps,
  entry: { who: string; action: AuditAction; batch?: string | null; detail?: AuditDetail },
): Promise<void> {
  const detail = entry.detail ?? {};
  const id = await deps.redis.xadd(
    keys(deps.prefix).audit,
    'MAXLEN',
    '~',
    String(MAX_ENTRIES),
    '*',
    'who',
    entry.who,
    'action',
    entry.action,
    'batch',
    entry.batch ?? '',
    'detail',
    JSON.stringify(detail),
  );
  if (deps.auditLogFile === undefined || id === null) return;
  await appendAuditLine(deps.redis, deps.prefix, deps.auditLogFile, {
    id,
    at: new Date(Number(id.split('-')[0])).toISOString(),
    who: entry.who,
    action: entry.action,
    batch: entry.batch ?? null,
    detail,
  });
}

/** Newest first. */
export async function readAudit(
  redis: Redis,
  prefix: string,
  options: { batch?: string; limit?: number } = {},
): Promise<AuditEntry[]> {
  const limit = options.limit ?? 200;
  const out: AuditEntry[] = [];
  let end = '+';
  // Filtered reads page backwards through the stream until enough entries match.
  for (let pages = 0; pages < 1000 && out.length < limit; pages++) {
    const rows = (await redis.xrevrange(keys(prefix).audit, end, '-', 'COUNT', 500)) as [string, string[]][];
    if (rows.length === 0) break;
    for (const [id, flat] of rows) {
      const f: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) f[flat[i] as string] = flat[i + 1] as string;
      if (options.batch && f['batch'] !== options.batch) continue;
      out.push({
        id,
        at: new Date(Number(id.split('-')[0])).toISOString(),
        // Older entries named it `actor`.
        who: f['who'] ?? f['actor'] ?? '',
        action: (f['action'] ?? 'enqueue') as AuditAction,
        batch: f['batch'] || null,
        detail: parseDetail(f['detail']),
      });
      if (out.length >= limit) break;
    }
    const lastId = rows[rows.length - 1]?.[0];
    if (!lastId || rows.length < 500) break;
    const [ms, seq] = lastId.split('-').map(Number) as [number, number];
    end = seq > 0 ? `${ms}-${seq - 1}` : `${ms - 1}`;
  }
  return out;
}

/** Stored as JSON; a plain string (written before details were objects) reads as `{ message }`. */
function parseDetail(text: string | undefined): AuditDetail {
  if (!text) return {};
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as AuditDetail;
  } catch {
    // not JSON: an older entry
  }
  return { message: text };
}

/** `k=v` pairs for a terminal table. */
export function formatAuditDetail(detail: AuditDetail): string {
  return Object.entries(detail)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
}
