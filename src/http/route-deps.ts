import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config/config.ts';
import type { ScreeningLists } from '../config/screening/screening-lists.ts';
import type { Credential } from '../domain/access.ts';
import type { Logger } from '../log/logger.ts';
import type { QueueMonitor } from '../queue/queue-monitor.ts';
import type { TransferJobSink } from '../domain/transfer-jobs.ts';
import type { ReplicaAcks } from '../store/replica-acks.ts';
import type { AccessList } from './access-list.ts';
import type { RouteRule } from './route-table.ts';

/*
 * What the app and its route plugins share: the dependencies a route receives and who is asking.
 * Routes import this module, never app.ts, so that app.ts (which imports every route) is the only
 * way in and the imports run one way. Which role a route needs is in route-table.ts.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry of the route table, given by app.ts as the route is added. */
    rule?: RouteRule;
  }
  interface FastifyRequest {
    /** The credential the request was authenticated with; null on a public route. */
    credential: Credential | null;
  }
}

export type AppDeps = {
  readonly config: Config;
  readonly redis: Redis;
  readonly producer: TransferJobSink;
  /**
   * Replica acknowledgements (docs/replicated-redis.md): a change is answered only once the
   * replicas hold it. Absent: answered once Redis has it (tests, tools).
   */
  readonly acks?: ReplicaAcks | undefined;
  readonly logger: Logger;
  /** The credentials accepted now (serve replaces them on SIGHUP); absent: the configuration's. */
  readonly access?: AccessList;
  readonly now?: () => number;
  /** Handles on every queue (metrics, dashboard); opened on `redis` and closed with the app when absent. */
  readonly queues?: QueueMonitor;
  /** The sanctions lists in force (serve reloads them; docs/screening.md); absent: none. */
  readonly screening?: ScreeningLists | undefined;
};

/** What route plugins receive: the app's dependencies, with the queue handles always present. */
export type RouteDeps = AppDeps & { readonly queues: QueueMonitor };

/** A route plugin receives the app's dependencies as its options. */
export type RoutePlugin = FastifyPluginAsync<{ deps: RouteDeps }>;

/**
 * Who made an authenticated request, for the audit (`who`), `submitted_by` and approvals: its
 * credential's name, never the token.
 */
export function actorOf(request: FastifyRequest): string {
  if (!request.credential) throw new Error('a route that acts must not be public');
  return request.credential.name;
}
