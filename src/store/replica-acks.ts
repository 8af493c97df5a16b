import type { Redis } from 'ioredis';
import { UsdcBatchError } from '../domain/errors.ts';
import type { Logger } from '../log/logger.ts';
import { keys } from './keys.ts';
import { luaScriptFile, runScript } from './lua-script.ts';

/*
 * README "Replicated Redis". Redis replicates asynchronously: a failover keeps only what the
 * promoted replica had received. Before money moves on a write (the mark before a send), and
 * before an operator's action is acknowledged, the write is held by the replicas the setting asks
 * for: a round on a connection of its own writes once more (replica-ack.lua) and sends `WAIT` right
 * after, so the count covers every write this process made before the round (a replica applies
 * the primary's writes in order). The round says where it landed: a write made on one primary and
 * a WAIT answered by another (a failover between them) prove nothing, and are refused.
 */

const ACK = luaScriptFile('replica-ack.lua');

/** Where writes landed: the primary's replication id, and the most replicas it has had. */
export type WriteSite = {
  /** `master_replid`; '' when the server would not say (INFO refused): nothing is known. */
  readonly primary: string;
  readonly replicas: number;
};

/** `REDIS_REPLICA_ACKS`: `auto`, or a fixed number of replicas. */
export type ReplicaAckSetting = 'auto' | number;

export type AckVerdict =
  | { readonly ok: true; readonly wanted: number }
  | { readonly ok: false; readonly wanted: number; readonly acked: number; readonly reason: string };

/** The replicas did not confirm an operator's write in time: the action is not acknowledged. */
export class ReplicasNotConfirmedError extends UsdcBatchError {
  override name = 'ReplicasNotConfirmedError';
}

/** How many replicas a write at `site` must reach. */
export function wantedReplicas(setting: ReplicaAckSetting, site: WriteSite): number {
  return setting === 'auto' ? site.replicas : setting;
}

/** The reason a transfer waits, or an action fails, in words an operator can act on. */
export function describeShortfall(acked: number, wanted: number, timeoutMs: number): string {
  const s = timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`;
  return `waiting for Redis replicas: ${acked} of ${wanted} acknowledged in ${s}`;
}

type RoundResult =
  | { readonly ok: true; readonly primary: string; readonly acked: number }
  | { readonly ok: false; readonly reason: string };

type Acks = {
  readonly redis: Redis;
  readonly prefix: string;
  readonly setting: ReplicaAckSetting;
  readonly timeoutMs: number;
  readonly logger: Logger | undefined;
  /** The rounds' own connection, opened on the first round (a standalone Redis never opens it). */
  conn: Redis | undefined;
  /** Counts the rounds' connection's closes: a WAIT answered on another connection proves nothing. */
  epoch: number;
  /** A round not sent yet, that callers of this tick join. */
  pending:
    { wanted: number; settle: (r: Promise<RoundResult>) => void; result: Promise<RoundResult> } | undefined;
  warnedUnknown: boolean;
};

/** Where writes go now (one script on `redis`): the site later writes are confirmed against. */
async function currentSite(a: Acks): Promise<WriteSite> {
  const res = (await runScript(a.redis, ACK, [keys(a.prefix).acks, keys(a.prefix).replicas], [])) as [
    string,
    number,
    number,
  ];
  const site = { primary: String(res[0]), replicas: Number(res[1]) };
  warnIfUnknown(a, site);
  return site;
}

function warnIfUnknown(a: Acks, site: WriteSite): void {
  if (site.primary !== '' || a.setting !== 'auto' || a.warnedUnknown) return;
  a.warnedUnknown = true;
  a.logger?.warn(
    'cannot read INFO replication (an ACL without INFO?): REDIS_REPLICA_ACKS=auto cannot tell how many replicas Redis has; set REDIS_REPLICA_ACKS to their number',
  );
}

/**
 * Waits until `wanted(site)` replicas hold every write this process made before the call, on the
 * primary of `site`. Nothing is asked of Redis when none is wanted.
 */
async function confirm(a: Acks, site: WriteSite): Promise<AckVerdict> {
  warnIfUnknown(a, site);
  const wanted = wantedReplicas(a.setting, site);
  if (wanted === 0) return { ok: true, wanted };
  const res = await joinRound(a, wanted);
  if (!res.ok) return { ok: false, wanted, acked: 0, reason: res.reason };
  if (site.primary !== '' && res.primary !== site.primary) {
    return {
      ok: false,
      wanted,
      acked: 0,
      reason: 'Redis failed over (the primary changed) after the write: it may be lost',
    };
  }
  if (res.acked < wanted) {
    return { ok: false, wanted, acked: res.acked, reason: describeShortfall(res.acked, wanted, a.timeoutMs) };
  }
  return { ok: true, wanted };
}

/**
 * The round callers of this tick share (their writes all came before it), sent on the next turn of
 * the event loop: one write and one WAIT for any number of them.
 */
function joinRound(a: Acks, wanted: number): Promise<RoundResult> {
  if (a.pending) {
    a.pending.wanted = Math.max(a.pending.wanted, wanted);
    return a.pending.result;
  }
  let settle: (r: Promise<RoundResult>) => void = () => {};
  const result = new Promise<RoundResult>((resolve) => (settle = resolve));
  const pending = { wanted, settle, result };
  a.pending = pending;
  setImmediate(() => {
    a.pending = undefined;
    pending.settle(sendRound(a, pending.wanted));
  });
  return result;
}

/**
 * The round's write, then `WAIT wanted timeout`, on the rounds' connection. A round cut off by a
 * closed connection (a failover) fails at once: its commands are not re-sent on the next connection,
 * and ioredis would leave them unanswered.
 */
async function sendRound(a: Acks, wanted: number): Promise<RoundResult> {
  const conn = roundConnection(a);
  const epoch = a.epoch;
  let onClose = () => {};
  let timer: NodeJS.Timeout | undefined;
  const cut = new Promise<RoundResult>((resolve) => {
    onClose = () =>
      resolve({ ok: false, reason: 'the connection to Redis closed during the acknowledgement' });
    conn.once('close', onClose);
    // WAIT answers by its timeout; a round not answered well after it will not be.
    timer = setTimeout(
      () => resolve({ ok: false, reason: 'Redis did not answer the acknowledgement' }),
      a.timeoutMs + 5_000,
    );
  });
  try {
    return await Promise.race([waitRound(a, conn, wanted, epoch), cut]);
  } finally {
    conn.off('close', onClose);
    clearTimeout(timer);
  }
}

async function waitRound(a: Acks, conn: Redis, wanted: number, epoch: number): Promise<RoundResult> {
  try {
    const k = keys(a.prefix);
    // A pipeline, not MULTI: inside a transaction WAIT would not wait.
    const replies = await conn
      .pipeline()
      .eval(ACK.text, 2, k.acks, k.replicas)
      .call('WAIT', String(wanted), String(a.timeoutMs))
      .exec();
    const [wrote, waited] = replies ?? [];
    if (!wrote || !waited || wrote[0] || waited[0]) {
      const err = wrote?.[0] ?? waited?.[0];
      return { ok: false, reason: `the replica acknowledgement failed: ${err?.message ?? 'no answer'}` };
    }
    if (a.epoch !== epoch) {
      return { ok: false, reason: 'the connection to Redis was re-made during the acknowledgement' };
    }
    const [primary] = wrote[1] as [string, number, number];
    return { ok: true, primary: String(primary), acked: Number(waited[1]) };
  } catch (err) {
    return { ok: false, reason: `the replica acknowledgement failed: ${(err as Error).message}` };
  }
}

function roundConnection(a: Acks): Redis {
  if (a.conn) return a.conn;
  // Its own connection: WAIT blocks the connection it is sent on. Commands cut off by a dropped
  // connection are not re-sent on the next one (a WAIT there would count nothing of ours).
  const conn = a.redis.duplicate({
    enableAutoPipelining: false,
    autoResendUnfulfilledCommands: false,
    // Commands in flight when the connection closes are failed at once (not re-sent, not left).
    maxRetriesPerRequest: 0,
  });
  conn.on('error', () => {});
  conn.on('close', () => a.epoch++);
  a.conn = conn;
  return conn;
}

export type ReplicaAcks = ReturnType<typeof createReplicaAcks>;

/** Replica acknowledgements on `redis`'s server (see above); wires the functions of this file. */
export function createReplicaAcks(deps: {
  redis: Redis;
  prefix: string;
  setting: ReplicaAckSetting;
  timeoutMs: number;
  logger?: Logger | undefined;
}) {
  const a: Acks = {
    redis: deps.redis,
    prefix: deps.prefix,
    setting: deps.setting,
    timeoutMs: deps.timeoutMs,
    logger: deps.logger,
    conn: undefined,
    epoch: 0,
    pending: undefined,
    warnedUnknown: false,
  };
  return {
    setting: deps.setting,
    timeoutMs: deps.timeoutMs,
    site: () => currentSite(a),
    confirm: (site: WriteSite) => confirm(a, site),
    /** `confirm`, or a ReplicasNotConfirmedError saying why (an action is then not acknowledged). */
    async ensure(site: WriteSite): Promise<void> {
      const v = await confirm(a, site);
      if (!v.ok) {
        throw new ReplicasNotConfirmedError(
          'USDC_REDIS_NOT_REPLICATED',
          `not acknowledged: ${v.reason}; the change may be lost in a failover, so it is not confirmed (try again)`,
        );
      }
    },
    async close(): Promise<void> {
      const conn = a.conn;
      a.conn = undefined;
      await conn?.quit().catch(() => conn.disconnect());
    },
  };
}

/**
 * Runs an operator's action (an enqueue, approve, cancel, retry, resolve, pause, an address-book or
 * schedule change) and returns its result only once the replicas hold what it wrote: a failover
 * between the write and the answer is an error (ReplicasNotConfirmedError), never a false success.
 * Without `acks` (tests, tools) the action's result is returned as it is.
 */
export async function acknowledged<T>(acks: ReplicaAcks | undefined, act: () => Promise<T>): Promise<T> {
  if (!acks) return await act();
  const site = await acks.site();
  const out = await act();
  await acks.ensure(site);
  return out;
}
