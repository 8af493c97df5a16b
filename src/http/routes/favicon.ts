import type { RoutePlugin } from '../route-deps.ts';
import { faviconSchema } from '../schemas/route-schemas.ts';

/**
 * `/favicon.ico`: a browser asks for it on every page load, without the page's credentials (it is
 * outside `/ui`). It holds nothing, so it answers 204 with no credential instead of a 401 — which
 * would also count as a failed authentication of the person's address (HTTP_AUTH_FAILURE_LIMIT).
 */
export const faviconRoute: RoutePlugin = async (app) => {
  app.get('/favicon.ico', { config: { auth: 'none' }, schema: faviconSchema }, async (_request, reply) =>
    reply.status(204).send(),
  );
};
