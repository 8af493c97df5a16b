import { onCleanup } from '../lib/cleanup.ts';
import { startRedisCluster } from '../lib/redis-cluster.ts';
import { mixedRows } from '../lib/rows.ts';
import {
  batchOutcome,
  enqueueFile,
  productEnv,
  startWorkers,
  waitBatchComplete,
  writeCsv,
} from '../lib/stack.ts';
import type { Context } from './throughput.ts';

export const CLUSTER_PREFIX = '{usdc}';

export type ClusterResult = {
  readonly masters: number;
  readonly rows: number;
  readonly slot: number;
  readonly ownerPort: number;
  readonly submitted: number;
  readonly perSecond: number;
  readonly keysInSlot: number;
  readonly keysElsewhere: number;
  readonly crossslotErrors: number;
  readonly movedErrors: number;
};

/**
 * 6. A 3-master Redis Cluster, QUEUE_PREFIX={usdc}: REDIS_URL names the master that owns the slot of
 * `{usdc}` (the product's clients are single-node clients), a mixed batch is enqueued and worked,
 * and every key is checked to be in that one slot.
 */
export async function benchCluster(ctx: Context, p: { rows: number }): Promise<ClusterResult> {
  const cluster = await startRedisCluster({ masters: 3 });
  const stopCluster = onCleanup(() => cluster.stop());
  let stopWorkers: (() => Promise<void>) | undefined;
  try {
    await ctx.sandbox.admin.reset();
    const owner = await cluster.ownerOf(CLUSTER_PREFIX);
    const env = productEnv({
      redisUrl: owner.node.url,
      prefix: CLUSTER_PREFIX,
      sandbox: ctx.sandbox,
      solanaKeyFile: ctx.solanaKeyFile,
      extra: { WORKER_CONCURRENCY: '64' },
    });
    const file = writeCsv(ctx.dir, 'cluster.csv', mixedRows(p.rows, 'cl'));
    const enq = await enqueueFile(file, env);
    const group = startWorkers(1, env);
    stopWorkers = group.stop;
    const client = cluster.client(owner.node);
    await waitBatchComplete(client, CLUSTER_PREFIX, enq.batchId, group, 600_000);
    const outcome = await batchOutcome(client, CLUSTER_PREFIX, enq.batchId);
    await group.stop();
    const output = `${enq.stderr}\n${group.output()}`;
    const keysInSlot = Number(await client.call('CLUSTER', 'COUNTKEYSINSLOT', String(owner.slot)));
    let keysElsewhere = (await client.dbsize()) - keysInSlot;
    for (const n of cluster.nodes)
      if (n.port !== owner.node.port) keysElsewhere += await cluster.client(n).dbsize();
    const result: ClusterResult = {
      masters: cluster.nodes.length,
      rows: p.rows,
      slot: owner.slot,
      ownerPort: owner.node.port,
      submitted: outcome.submitted,
      perSecond: outcome.perSecond,
      keysInSlot,
      keysElsewhere,
      crossslotErrors: (output.match(/CROSSSLOT/g) ?? []).length,
      movedErrors: (output.match(/MOVED/g) ?? []).length,
    };
    ctx.log(
      `cluster: ${result.submitted}/${p.rows} submitted, ${result.crossslotErrors} CROSSSLOT, ${result.keysElsewhere} keys outside the slot`,
    );
    return result;
  } finally {
    await stopWorkers?.();
    await stopCluster();
  }
}
