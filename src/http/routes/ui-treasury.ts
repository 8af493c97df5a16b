import { nextFiring } from '../../queue/schedule-identity.ts';
import { pausedView } from '../../present/batch-summary.ts';
import { readPause } from '../../store/pause-flag.ts';
import { readTreasuryView } from '../../treasury/treasury-view.ts';
import type { RoutePlugin } from '../route-deps.ts';
import { uiTreasurySchema } from '../schemas/treasury-schema.ts';
import { UI_HEADERS } from '../ui/page-shell.ts';
import { treasuryPage } from '../ui/treasury-page.ts';

/** `/ui/treasury`: the page of GET /v1/treasury, for people (the batch pages' credentials). */
export const uiTreasuryRoute: RoutePlugin = async (app, { deps }) => {
  app.get('/ui/treasury', { schema: uiTreasurySchema }, async (_request, reply) => {
    const [view, pause] = await Promise.all([
      readTreasuryView({
        redis: deps.redis,
        prefix: deps.config.queuePrefix,
        config: deps.config,
        nextRun: (cron, tz) => nextFiring(cron, tz),
      }),
      readPause(deps.redis, deps.config.queuePrefix),
    ]);
    return reply
      .status(200)
      .headers(UI_HEADERS)
      .send(treasuryPage(view, pausedView(pause)).toString());
  });
};
