import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RoutePlugin } from '../route-deps.ts';
import { errorDocument } from '../http-errors.ts';
import { queueDescription } from '../../queue/queue-monitor.ts';

export const DASHBOARD_PATH = '/dashboard';

/**
 * bull-board's pages: its own scripts, stylesheets, images (some as `data:` URLs), translations and
 * API calls, all from this server (`<base href="/dashboard/">` is 'self' too); nothing inline, no
 * eval, nothing from elsewhere (its Google web fonts are not loaded: the system font is used), and
 * never in a frame. The rest of every answer's headers come from request-guards.ts.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * `/dashboard`: every queue (transfers per source chain, intents, callbacks, schedules) in
 * bull-board, read-only, each with its description (what its completed and failed jobs mean). Job
 * data holds only pointers (`{batchId, transferId}`, an intent id, a schedule name); job results
 * and step logs hold outcomes (intent ids, tx hashes, addresses, amounts, reasons) — never a key,
 * permit, signature or signed transaction — so showing them reveals no secret.
 *
 * Authentication (route-table.ts): the HTML page and its `/dashboard/api/*` data routes need a
 * credential that may read, as a bearer token or as the password of HTTP Basic auth (a browser
 * cannot add a bearer header, so a 401 here asks it for a login: any user name, the token as the
 * password). The browser then sends the same credentials with every `/dashboard/api/*` call. Only
 * the UI's own static files (`/dashboard/static/*`: bull-board's JavaScript, CSS and images, the
 * same for every install) are served without credentials; they hold no data.
 *
 * Read-only twice over: every queue adapter is in `readOnlyMode` (bull-board refuses its actions),
 * and any request other than GET or HEAD is refused here before bull-board sees it.
 */
export const dashboardRoute: RoutePlugin = async (app, { deps }) => {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    return await refuseWrite(request, reply);
  });
  // After the app's own onSend (which gives API_CSP to a route without one): this plugin's routes
  // are bull-board's.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', DASHBOARD_CSP);
    return payload;
  });

  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: deps.queues.queues.map(
      (q) => new BullMQAdapter(q, { readOnlyMode: true, description: queueDescription(q.name) }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'usdc-batch' } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
  // bull-board registers only the methods it serves: without these, `PUT /dashboard` would be a
  // 404. Every write anywhere under /dashboard is a route here, so the hook above answers it 405.
  app.route({ method: WRITE_METHODS, url: DASHBOARD_PATH, handler: refuseWrite });
  app.route({ method: WRITE_METHODS, url: `${DASHBOARD_PATH}/*`, handler: refuseWrite });
};

const WRITE_METHODS = ['DELETE', 'PATCH', 'POST', 'PUT'];

async function refuseWrite(_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  return await reply
    .status(405)
    .header('allow', 'GET, HEAD')
    .send(errorDocument(405, 'USDC_HTTP_READ_ONLY', 'the dashboard is read-only'));
}
