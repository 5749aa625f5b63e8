import type { Middleware } from 'h3';

export const PUBLIC_CORS_HEADERS = {
  'access-control-allow-origin': '*',
  // Lets a custom checkout read the request id of an error and the wait of a 503.
  'access-control-expose-headers': 'X-Request-Id, Retry-After',
} as const;

/** Paths whose every answer carries PUBLIC_CORS_HEADERS. */
export function isPublicPath(pathname: string): boolean {
  return pathname.startsWith('/pay/');
}

const PREFLIGHT_HEADERS = {
  ...PUBLIC_CORS_HEADERS,
  'access-control-allow-methods': 'GET, OPTIONS',
  'access-control-allow-headers': 'Last-Event-ID, Content-Type',
  'access-control-max-age': '86400',
} as const;

/**
 * CORS for the public checkout API (spec 4.2 rule 1): every response under
 * /pay/ carries Access-Control-Allow-Origin: *, errors included, and a
 * preflight OPTIONS answers 204 here, before any route can call it a 405.
 * Nothing under /pay/ uses cookies, so the wildcard is safe.
 *
 * The headers are set before the handler runs: request-context renders thrown
 * errors with event.res's headers (and adds them itself to an error raised
 * before this middleware, see isPublicPath), and h3 merges them into returned bodies.
 * A handler that returns its own Response with an error status bypasses both
 * and must add PUBLIC_CORS_HEADERS itself.
 */
export function publicCors(): Middleware {
  return (event, next) => {
    if (event.req.method === 'OPTIONS') {
      // It reads nothing: after a failed fdatasync it still answers, so the page's GET gets the 503 it can read.
      event.context.readsNoData = true;
      return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
    }
    for (const [k, v] of Object.entries(PUBLIC_CORS_HEADERS)) event.res.headers.set(k, v);
    return next();
  };
}
