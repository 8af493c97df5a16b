import { nextFiring } from '../../queue/schedule-identity.ts';
import { readTreasuryView } from '../../treasury/treasury-view.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { treasurySchema } from '../schemas/treasury-schema.ts';

/** `GET /v1/treasury`: balances, flows and positions per chain, and the scheduled policies' targets. */
export const treasuryRoute: RoutePlugin = async (app, { deps }) => {
  app.get('/v1/treasury', { schema: treasurySchema }, async () => {
    return await readTreasuryView({
      redis: deps.redis,
      prefix: deps.config.queuePrefix,
      config: deps.config,
      nextRun: (cron, tz) => nextFiring(cron, tz),
    });
  });
};
