import type { H3, H3Event, HTTPMethod } from 'h3';
import { ApiError } from '../../domain/errors.ts';

type Handler = (event: H3Event) => unknown;

/**
 * Registers one path with a handler per method. A known path asked with
 * another method answers 405 method_not_allowed with an Allow header, rather
 * than the router's 404.
 */
export function defineRoute(app: H3, path: string, methods: Partial<Record<HTTPMethod, Handler>>): void {
  const allow = Object.keys(methods).join(', ');
  app.all(path, (event) => {
    const handler = methods[event.req.method as HTTPMethod];
    if (!handler) {
      event.res.headers.set('allow', allow);
      throw new ApiError('method_not_allowed', `${event.req.method} is not allowed here; use ${allow}`);
    }
    return handler(event);
  });
}

/** A route parameter, decoded once; malformed escapes are a plain not_found. */
export function routeParam(event: H3Event, name: string): string {
  const raw = event.context.params?.[name];
  if (raw === undefined) throw new ApiError('not_found', 'not found');
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ApiError('not_found', 'not found');
  }
}
