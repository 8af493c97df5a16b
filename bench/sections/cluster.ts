import { queueNameFor } from '../../src/queue/jobs.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { commandCalls, totalCalls } from '../lib/redis-info.ts';
import { startRedisCluster } from '../../support/redis-cluster.ts';
import { evmRows } from '../lib/rows.ts';
import {
  batchOutcome,
  enqueueFile,
  productEnv,
  startWorkers,
  waitBatchComplete,
  writeCsv,
} from '../lib/stack.ts';
import { checkPaidOnce, runProductBatch, type Context } from './throughput.ts';

export const CLUSTER_PREFIX = '{usdc}';

/** The EVM pace and Redis commands per transfer of one run. */
export type PaceRun = { readonly perSecond: number; readonly commandsPerTransfer: number };

export type ClusterResult = {
  readonly masters: number;
  readonly replicas: number;
  readonly rows: number;
  readonly slot: number;
  readonly ownerPort: number;
  readonly submitted: number;
  /** Through REDIS_CLUSTER_NODES, commands counted on the slot's master. */
  readonly cluster: PaceRun;
  /** The same rows on one durable Redis, without and with a replica (every send waits for it). */
  readonly standalone: PaceRun;
  readonly replicated: PaceRun;
  readonly keysInSlot: number;
  readonly keysElsewhere: number;
  readonly crossslotErrors: number;
  readonly movedErrors: number;
};

/**
 * 6. A Redis Cluster of 3 durable masters with a replica each, QUEUE_PREFIX={usdc}, the product
 * given REDIS_CLUSTER_NODES (every connection a cluster client): an EVM batch (one owner, BASE to
 * ARB) worked through it, its pace and the Redis commands per transfer (INFO commandstats on the
 * slot's master) set against the same batch on one durable Redis, without and with a replica; and
 * every key checked to be in the one slot.
 */
export async function benchCluster(ctx: Context, p: { rows: number }): Promise<ClusterResult> {
  const rows = evmRows(p.rows, ['BASE'], 'cl', 'ARB');
  const standalone = await runProductBatch(ctx, { rows, workers: 1, name: 'cluster-standalone' });
  const replicated = await runProductBatch(ctx, {
    rows,
    workers: 1,
    name: 'cluster-replicated',
    replica: true,
  });
  const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 2_000 });
  const stopCluster = onCleanup(() => cluster.stop());
  let stopWorkers: (() => Promise<void>) | undefined;
  try {
    await ctx.sandbox.admin.reset();
    const owner = await cluster.ownerOf(CLUSTER_PREFIX);
    const env = productEnv({
      // Only its credentials would count; its host is not used with REDIS_CLUSTER_NODES.
      redisUrl: 'redis://127.0.0.1:1',
      prefix: CLUSTER_PREFIX,
      sandbox: ctx.sandbox,
      solanaKeyFile: ctx.solanaKeyFile,
      extra: { REDIS_CLUSTER_NODES: cluster.seeds },
    });
    const file = writeCsv(ctx.dir, 'cluster.csv', rows);
    const enq = await enqueueFile(file, env);
    const client = cluster.client(owner.node);
    await client.config('RESETSTAT');
    const group = startWorkers(1, env);
    stopWorkers = group.stop;
    await waitBatchComplete(client, CLUSTER_PREFIX, enq.batchId, group, 600_000);
    const calls = await commandCalls(client);
    const outcome = await batchOutcome(client, CLUSTER_PREFIX, enq.batchId);
    await group.stop();
    await checkPaidOnce(ctx.sandbox, rows.length, 'cluster');
    const output = `${enq.stderr}\n${group.output()}`;
    const keysInSlot = Number(await client.call('CLUSTER', 'COUNTKEYSINSLOT', String(owner.slot)));
    let keysElsewhere = (await client.dbsize()) - keysInSlot;
    const holders = new Set([owner.node.port, ...(await cluster.replicasOf(owner.node)).map((n) => n.port)]);
    for (const n of cluster.nodes)
      if (!holders.has(n.port)) keysElsewhere += await cluster.client(n).dbsize();
    const result: ClusterResult = {
      masters: 3,
      replicas: 1,
      rows: p.rows,
      slot: owner.slot,
      ownerPort: owner.node.port,
      submitted: outcome.submitted,
      cluster: { perSecond: outcome.perSecond, commandsPerTransfer: totalCalls(calls) / rows.length },
      standalone: { perSecond: standalone.perSecond, commandsPerTransfer: standalone.commandsPerTransfer },
      replicated: { perSecond: replicated.perSecond, commandsPerTransfer: replicated.commandsPerTransfer },
      keysInSlot,
      keysElsewhere,
      crossslotErrors: (output.match(/CROSSSLOT/g) ?? []).length,
      movedErrors: (output.match(/MOVED/g) ?? []).length,
    };
    ctx.log(
      `cluster (${queueNameFor('BASE')}): ${result.submitted}/${p.rows} submitted; ${result.cluster.perSecond.toFixed(2)}/s, ${result.cluster.commandsPerTransfer.toFixed(1)} commands per transfer (standalone ${result.standalone.perSecond.toFixed(2)}/s, ${result.standalone.commandsPerTransfer.toFixed(1)}; with a replica ${result.replicated.perSecond.toFixed(2)}/s, ${result.replicated.commandsPerTransfer.toFixed(1)}); ${result.crossslotErrors} CROSSSLOT, ${result.keysElsewhere} keys outside the slot`,
    );
    return result;
  } finally {
    await stopWorkers?.();
    await stopCluster();
  }
}
