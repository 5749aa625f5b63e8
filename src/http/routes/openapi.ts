import type { H3 } from 'h3';
import { OPENAPI_DOCUMENT } from '../openapi.ts';
import { defineRoute } from '../internal/route.ts';

export function registerOpenApiRoute(app: H3): void {
  const body = JSON.stringify(OPENAPI_DOCUMENT);
  defineRoute(app, '/v1/openapi.json', {
    GET: () => new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=300' } }),
  });
}
