import type { H3Event } from 'h3';

/**
 * Answers with a JSON text already serialized (a cached view, a stored
 * replay). Headers on event.res and a string body keep srvx on its fast path;
 * a returned Response would be rebuilt by h3 to add the request-id header.
 */
export function sendJson(event: H3Event, body: string, status = 200): string {
  event.res.status = status;
  event.res.headers.set('content-type', 'application/json; charset=utf-8');
  return body;
}
