import type { FastifyPluginAsync } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { QueueMonitor } from '../queue/queue-monitor.ts';
import type { TransferJobSink } from '../store/batch-writer.ts';
import type { ReplicaAcks } from '../store/replica-acks.ts';

/*
 * What the app and its route plugins share: the dependencies a route receives, the credential a
 * route asks for, and the audit actors. Routes import this module, never app.ts, so that app.ts
 * (which imports every route) is the only way in and the imports run one way.
 */

/**
 * Which credential a route needs: the hook's bearer token (default), the approver's, none, or
 * (`dashboard`) the hook token as a bearer token or as the password of HTTP Basic auth, so that a
 * browser, which cannot add a bearer header, can open the dashboard after its login prompt.
 */
export type RouteAuth = 'hook' | 'approver' | 'dashboard' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}

export type AppDeps = {
  readonly config: Config;
  readonly redis: Redis;
  readonly producer: TransferJobSink;
  /**
   * Replica acknowledgements (README "Replicated Redis"): a change is answered only once the
   * replicas hold it. Absent: answered once Redis has it (tests, tools).
   */
  readonly acks?: ReplicaAcks | undefined;
  readonly logger: Logger;
  readonly now?: () => number;
  /** Handles on every queue (metrics, dashboard); opened on `redis` and closed with the app when absent. */
  readonly queues?: QueueMonitor;
};

/** What route plugins receive: the app's dependencies, with the queue handles always present. */
export type RouteDeps = AppDeps & { readonly queues: QueueMonitor };

/** A route plugin receives the app's dependencies as its options. */
export type RoutePlugin = FastifyPluginAsync<{ deps: RouteDeps }>;

/** The audit actor of a request authenticated with each token (never the token itself). */
export const HTTP_ACTORS = { hook: 'http:hook', approver: 'http:approver' } as const;
