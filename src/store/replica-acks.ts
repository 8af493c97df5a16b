import type { Redis } from 'ioredis';
import { UsdcBatchError } from '../domain/errors.ts';
import type { Logger } from '../log/logger.ts';
import { keys } from './keys.ts';
import { duplicateConnection } from './redis-endpoint.ts';
import { luaScriptFile, runScript, type LuaScript } from './lua-script.ts';
import { replyArray, replyInt, replyString } from './lua-reply.ts';

/*
 * docs/replicated-redis.md. Redis replicates asynchronously: a failover keeps only what the
 * promoted replica had received. Before money moves on a write (the mark before a send), and
 * before an operator's action is acknowledged, the write is held by the replicas the setting asks
 * for, counted by `WAIT` — which counts the replicas holding the writes of the connection it is sent
 * on, and blocks that connection meanwhile. So these rounds go on a connection of their own:
 * - a send's mark is written there itself, and `WAIT` follows it (writeAcked): one command more
 *   than on a standalone Redis; the marks of the sends of one moment share a round;
 * - an operator's action, written on the process's usual connection, is covered by a write the
 *   round makes after it (replica-ack.lua), then `WAIT` (confirm): a replica applies the primary's
 *   writes in order. That write says where it landed: a round answered by another primary than the
 *   action's (a failover in between) proves nothing, and is refused.
 * A round whose connection closed before its `WAIT` answered proves nothing either.
 */

const ACK = luaScriptFile('replica-ack.lua');
const PROBE = luaScriptFile('replica-probe.lua');

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

/** A script call the round makes on its own connection (the write a send rests on). */
export type ScriptCall = {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
};

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

const OK = (wanted: number): AckVerdict => ({ ok: true, wanted });

/** What one participant of a round gets back. */
type Answer =
  | { readonly ok: true; readonly reply: unknown; readonly acked: number }
  | { readonly ok: false; readonly reason: string };

type Round = {
  wanted: number;
  /** Whether the round writes replica-ack.lua first (someone confirms writes made elsewhere). */
  probe: boolean;
  readonly writes: ScriptCall[];
  readonly answers: ((a: readonly Answer[], probe: Answer) => void)[];
};

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
  pending: Round | undefined;
  /** Where the last write landed: how many replicas the next one will likely want. */
  known: WriteSite | undefined;
  warnedUnknown: boolean;
};

function knownArg(a: Acks): string {
  return a.known && a.known.primary !== '' ? `${a.known.primary}|${a.known.replicas}` : '';
}

function learn(a: Acks, site: WriteSite): void {
  if (site.primary === '' && a.setting === 'auto' && !a.warnedUnknown) {
    a.warnedUnknown = true;
    a.logger?.warn(
      'cannot read INFO replication (an ACL without INFO?): REDIS_REPLICA_ACKS=auto cannot tell how many replicas Redis has; set REDIS_REPLICA_ACKS to their number',
    );
  }
  a.known = site;
}

/**
 * Where writes go now (one read-only script on `redis`): the site later writes are confirmed
 * against.
 */
async function currentSite(a: Acks): Promise<WriteSite> {
  const res = replyArray(
    'replica-probe.lua',
    await runScript(a.redis, PROBE, [keys(a.prefix).replicas], [knownArg(a)]),
  );
  const site = {
    primary: replyString('replica-probe.lua', res[0], { orEmpty: true }),
    replicas: replyInt('replica-probe.lua', res[1]),
  };
  learn(a, site);
  return site;
}

/**
 * Waits until `wanted(site)` replicas hold every write this process made before the call, on the
 * primary of `site`. Nothing is asked of Redis when none is wanted.
 */
async function confirm(a: Acks, site: WriteSite): Promise<AckVerdict> {
  const wanted = wantedReplicas(a.setting, site);
  if (wanted === 0) return OK(wanted);
  const { probe } = await joinRound(a, wanted, undefined);
  if (!probe.ok) return { ok: false, wanted, acked: 0, reason: probe.reason };
  const [primary] = probe.reply as [string];
  if (site.primary !== '' && String(primary) !== site.primary) {
    return {
      ok: false,
      wanted,
      acked: 0,
      reason: 'Redis failed over (the primary changed) after the write: it may be lost',
    };
  }
  return verdictOf(a, wanted, probe.acked);
}

function verdictOf(a: Acks, wanted: number, acked: number): AckVerdict {
  if (acked >= wanted) return OK(wanted);
  return { ok: false, wanted, acked, reason: describeShortfall(acked, wanted, a.timeoutMs) };
}

/**
 * Writes `build(known)` and returns its reply once the replicas its site asks for hold it. Where
 * replicas are expected the write goes on the rounds' connection, with `WAIT` right after it; where
 * none are (a standalone Redis), on the usual connection, and nothing is waited for. `siteOf` reads
 * the site from the reply (undefined: nothing was written, nothing to wait for). A reply of
 * undefined with a failed verdict: the round was cut off, whether the write landed is unknown.
 */
async function writeAcked(
  a: Acks,
  build: (known: string) => ScriptCall,
  siteOf: (reply: unknown) => WriteSite | undefined,
): Promise<{ readonly reply: unknown; readonly verdict: AckVerdict }> {
  const call = build(knownArg(a) || '?');
  const expected = a.known ? wantedReplicas(a.setting, a.known) : a.setting === 'auto' ? 0 : a.setting;
  if (expected === 0) {
    const reply = await runScript(a.redis, call.script, call.keys, call.args);
    const site = siteOf(reply);
    if (!site) return { reply, verdict: OK(0) };
    learn(a, site);
    // A replica appeared since the last write: a round of its own covers this one.
    return { reply, verdict: await confirm(a, site) };
  }
  const { writes } = await joinRound(a, expected, call);
  const answer = writes[0] as Answer;
  if (!answer.ok)
    return { reply: undefined, verdict: { ok: false, wanted: expected, acked: 0, reason: answer.reason } };
  const site = siteOf(answer.reply);
  if (!site) return { reply: answer.reply, verdict: OK(0) };
  learn(a, site);
  const wanted = wantedReplicas(a.setting, site);
  // The round asked for fewer replicas than this primary has had: ask again for all of them.
  if (wanted > expected) return { reply: answer.reply, verdict: await confirm(a, site) };
  return { reply: answer.reply, verdict: verdictOf(a, wanted, answer.acked) };
}

/**
 * The round callers of this tick share, sent on the next turn of the event loop: their writes,
 * and for those confirming writes made elsewhere replica-ack.lua, then one `WAIT` for the most
 * replicas any of them wants.
 */
function joinRound(
  a: Acks,
  wanted: number,
  write: ScriptCall | undefined,
): Promise<{ writes: readonly Answer[]; probe: Answer }> {
  let round = a.pending;
  if (!round) {
    const r: Round = { wanted, probe: false, writes: [], answers: [] };
    round = a.pending = r;
    setImmediate(() => {
      a.pending = undefined;
      void sendRound(a, r).then(({ writes, probe }) => {
        for (const answer of r.answers) answer(writes, probe);
      });
    });
  }
  round.wanted = Math.max(round.wanted, wanted);
  if (!write) round.probe = true;
  const index = write ? round.writes.push(write) - 1 : -1;
  return new Promise((resolve) => {
    round.answers.push((writes, probe) =>
      resolve({ writes: index >= 0 ? [writes[index] as Answer] : [], probe }),
    );
  });
}

/**
 * The round on the rounds' connection. Cut off by a closed connection (a failover), it fails at
 * once: its commands are not re-sent on the next connection, and ioredis would leave them unanswered.
 */
async function sendRound(a: Acks, r: Round): Promise<{ writes: Answer[]; probe: Answer }> {
  const conn = roundConnection(a);
  const epoch = a.epoch;
  let onClose = () => {};
  let timer: NodeJS.Timeout | undefined;
  const failed = (reason: string) => {
    const no: Answer = { ok: false, reason };
    return { writes: r.writes.map(() => no), probe: no };
  };
  const cut = new Promise<{ writes: Answer[]; probe: Answer }>((resolve) => {
    onClose = () => resolve(failed('the connection to Redis closed during the acknowledgement'));
    conn.once('close', onClose);
    // WAIT answers by its timeout; a round not answered well after it will not be.
    timer = setTimeout(
      () => resolve(failed('Redis did not answer the acknowledgement')),
      a.timeoutMs + 5_000,
    );
  });
  try {
    return await Promise.race([
      roundReplies(a, conn, r, epoch).catch((err: unknown) =>
        failed(`the replica acknowledgement failed: ${(err as Error).message}`),
      ),
      cut,
    ]);
  } finally {
    conn.off('close', onClose);
    clearTimeout(timer);
  }
}

async function roundReplies(
  a: Acks,
  conn: Redis,
  r: Round,
  epoch: number,
): Promise<{ writes: Answer[]; probe: Answer }> {
  const k = keys(a.prefix);
  // A pipeline, not MULTI: inside a transaction WAIT would not wait. Scripts by their text: the
  // rounds' connection may meet a Redis that never saw them (a promoted replica has their SHA).
  const pipe = conn.pipeline();
  if (r.probe) pipe.eval(ACK.text, 2, k.acks, k.replicas, knownArg(a));
  for (const w of r.writes) pipe.eval(w.script.text, w.keys.length, ...w.keys, ...w.args);
  pipe.call('WAIT', String(r.wanted), String(a.timeoutMs));
  const replies = (await pipe.exec()) ?? [];
  const waited = replies.at(-1);
  const reconnected = a.epoch !== epoch;
  const acked = waited && !waited[0] ? Number(waited[1]) : -1;
  const answer = (reply: [Error | null, unknown] | undefined): Answer => {
    if (!reply || reply[0])
      return { ok: false, reason: `the write failed: ${reply?.[0]?.message ?? 'no answer'}` };
    if (acked < 0)
      return {
        ok: false,
        reason: `the replica acknowledgement failed: ${waited?.[0]?.message ?? 'no answer'}`,
      };
    if (reconnected)
      return { ok: false, reason: 'the connection to Redis was re-made during the acknowledgement' };
    return { ok: true, reply: reply[1], acked };
  };
  const offset = r.probe ? 1 : 0;
  return {
    probe: r.probe ? answer(replies[0]) : { ok: false, reason: 'no probe' },
    writes: r.writes.map((_, i) => answer(replies[offset + i])),
  };
}

function roundConnection(a: Acks): Redis {
  if (a.conn) return a.conn;
  const conn = duplicateConnection(a.redis, {
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
    known: undefined,
    warnedUnknown: false,
  };
  return {
    setting: deps.setting,
    timeoutMs: deps.timeoutMs,
    site: () => currentSite(a),
    /**
     * Where this process's writes last landed, as learnt from them (no command). Read before a write,
     * it is that write's site or an earlier one: a failover in between shows as a different site
     * (pipeline/evm/permit-discard.ts relies on that), never the other way round.
     */
    lastSite: (): WriteSite | undefined => a.known,
    confirm: (site: WriteSite) => confirm(a, site),
    writeAcked: (build: (known: string) => ScriptCall, siteOf: (reply: unknown) => WriteSite | undefined) =>
      writeAcked(a, build, siteOf),
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
