import type { FastifyInstance } from 'fastify';

/**
 * For POST routes that take no body: any body (or none, with any content type) is accepted and
 * ignored, so `curl -X POST`, an empty JSON body and `{}` all work alike.
 */
export function ignoreBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) => done(null, undefined));
}
