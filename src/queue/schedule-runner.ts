import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { workerConnection } from './queue-options.ts';
import type { RedisEndpoint } from '../store/redis-endpoint.ts';
import type { Logger } from '../log/logger.ts';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import type { RebalanceFiringDeps } from '../treasury/rebalance-firing.ts';
import { createProducer, type Producer } from './producer.ts';
import { fireSchedule, type FireDeps } from './schedule-firing.ts';
import { SCHEDULE_NAME_PATTERN } from './schedule-identity.ts';
import { SCHEDULE_QUEUE } from './schedules.ts';

/** The firing's scheduled time: BullMQ's `prevMillis`, else the time in the job id `repeat:<name>:<ms>`. */
export function scheduledTimeOf(job: Pick<Job, 'id' | 'opts'>): number | undefined {
  const prev = job.opts.prevMillis;
  if (typeof prev === 'number' && Number.isFinite(prev) && prev > 0) return prev;
  const m = /:([0-9]{10,})$/.exec(job.id ?? '');
  return m ? Number(m[1]) : undefined;
}

export type ScheduleRunnerDeps = {
  readonly endpoint: RedisEndpoint;
  readonly prefix: string;
  /** A normal connection for reads and writes (the runner's blocking connection is its own). */
  readonly redis: Redis;
  readonly config: FireDeps['config'];
  readonly logger: Logger;
  /** Where firing batches add their transfer jobs; by default a producer on `redis`. */
  readonly producer?: TransferJobSink | undefined;
  readonly rebalance?: RebalanceFiringDeps | undefined;
};

export type ScheduleRunner = { close(): Promise<void> };

/** The worker side: takes firing jobs of the `schedules` queue (run by every `usdc-batch worker`). */
export function createScheduleRunner(deps: ScheduleRunnerDeps): ScheduleRunner {
  let own: Producer | undefined;
  const jobs: TransferJobSink =
    deps.producer ?? (own = createProducer({ connection: deps.redis, prefix: deps.prefix }));
  const { connection, close } = workerConnection(deps.endpoint);
  const worker = new Worker(
    SCHEDULE_QUEUE,
    async (job: Job) => {
      const data = job.data as { name?: unknown } | null;
      const name = typeof data?.name === 'string' ? data.name : job.repeatJobKey;
      const at = scheduledTimeOf(job);
      if (name === undefined || !SCHEDULE_NAME_PATTERN.test(name) || at === undefined) {
        deps.logger.warn({ jobId: job.id }, 'schedule job without a schedule name or time; ignored');
        return 'ignored';
      }
      const r = await fireSchedule({ ...deps, jobs }, name, at);
      return r.status;
    },
    { connection, prefix: deps.prefix, concurrency: 1 },
  );
  worker.on('error', (err) => deps.logger.warn({ err: { message: err.message } }, 'schedule worker error'));
  worker.on('failed', (job, err) =>
    deps.logger.warn({ jobId: job?.id, err: { message: err.message } }, 'schedule firing failed; will retry'),
  );
  return {
    async close() {
      await worker.close();
      await close();
      await own?.close();
    },
  };
}
