import { createWriteStream } from 'node:fs';
import { Redis } from 'ioredis';

/**
 * What a batch's Redis commands touch, counted by kind of key: a `MONITOR` connection sees every
 * command, those run inside Lua scripts included (as INFO commandstats counts them), and each is
 * put in the kind of its first key (docs/data-model.md names them). MONITOR slows Redis down, so
 * the bench traces a run of its own and never times it.
 */
export type CommandTrace = {
  /** Stops watching; the commands seen, per kind. */
  stop(): Promise<Map<string, number>>;
};

export const COMMAND_KINDS = [
  'transfer jobs (BullMQ: add, take, finish)',
  'job step logs and progress',
  'transfer records (state changes, fees, saved steps)',
  'transfer locks',
  'batch records, row and state sets',
  'nonce leases',
  'owner balance reservations',
  'intent following',
  'ingest (payout ids, fingerprints, recipients)',
  'metrics, worker upkeep, other queues',
  'other (MULTI/EXEC, TIME, pub/sub)',
] as const;
export type CommandKind = (typeof COMMAND_KINDS)[number];

/**
 * `dumpTo` (the bench's `BENCH_TRACE_FILE`): every command seen is also written there, one line each
 * (its kind, then the command with its arguments cut to 40 characters, indented when a Lua script
 * ran it), to find what to cut.
 */
export async function traceCommands(
  url: string,
  prefix: string,
  dumpTo?: string,
  /** Clients (`ip:port`, as CLIENT INFO's `addr`) whose commands are the bench's own: not counted. */
  ignore: readonly string[] = [],
): Promise<CommandTrace> {
  const counts = new Map<string, number>();
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  client.on('error', () => {});
  const dump = dumpTo ? createWriteStream(dumpTo) : undefined;
  const monitor = await client.monitor();
  let stopped = false;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    // A command the connection had read before it closed may still come: the dump has ended.
    if (stopped || ignore.includes(source)) return;
    const kind = kindOf(prefix, args);
    if (kind) counts.set(kind, (counts.get(kind) ?? 0) + 1);
    if (kind && dump)
      dump.write(`${kind}\t${source === 'lua' ? '  ' : ''}${args.map((a) => a.slice(0, 40)).join(' ')}\n`);
  });
  return {
    async stop() {
      stopped = true;
      monitor.disconnect();
      client.disconnect();
      if (dump) await new Promise((done) => dump.end(done));
      return counts;
    },
  };
}

/** The first key a command names (EVAL/EVALSHA: its KEYS[1]), or undefined. */
function firstKey(args: readonly string[]): string | undefined {
  const cmd = (args[0] ?? '').toLowerCase();
  if (cmd === 'eval' || cmd === 'evalsha') return Number(args[2]) > 0 ? args[3] : undefined;
  if (['multi', 'exec', 'time', 'publish', 'subscribe', 'ping', 'info', 'client', 'select'].includes(cmd))
    return undefined;
  return args[1];
}

export function kindOf(prefix: string, args: readonly string[]): CommandKind | undefined {
  const cmd = (args[0] ?? '').toLowerCase();
  // The trace's own and the bench's reads.
  if (cmd === 'monitor' || cmd === 'info' || cmd === 'config' || cmd === 'memory' || cmd === 'scan')
    return undefined;
  const key = firstKey(args);
  if (key === undefined || !key.startsWith(`${prefix}:`)) return 'other (MULTI/EXEC, TIME, pub/sub)';
  const k = key.slice(prefix.length + 1);
  if (k.startsWith('transfers-')) {
    return k.endsWith(':logs') ? 'job step logs and progress' : 'transfer jobs (BullMQ: add, take, finish)';
  }
  if (k.startsWith('t:'))
    return k.endsWith(':lock') ? 'transfer locks' : 'transfer records (state changes, fees, saved steps)';
  if (k.startsWith('batch')) return 'batch records, row and state sets';
  if (k.startsWith('nonce:')) return 'nonce leases';
  if (k.startsWith('reserve:')) return 'owner balance reservations';
  if (k.startsWith('intents') || k.startsWith('follow')) return 'intent following';
  if (k.startsWith('payout:') || k.startsWith('fp:') || k.startsWith('recipients'))
    return 'ingest (payout ids, fingerprints, recipients)';
  return 'metrics, worker upkeep, other queues';
}
