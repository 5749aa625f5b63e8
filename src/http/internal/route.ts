import type { H3, H3Event, HTTPMethod } from 'h3';
import { ApiError } from '../../domain/errors.ts';
import { getOrInsert } from '../../get-or-insert.ts';

type Handler = (event: H3Event) => unknown;

export interface RouteInfo {
  path: string;
  methods: HTTPMethod[];
}

const registered = new WeakMap<H3, RouteInfo[]>();

/** Every path and method an app serves: the OpenAPI test holds the document to it. */
export function listRoutes(app: H3): RouteInfo[] {
  return registered.get(app) ?? [];
}

/**
 * Registers one path with a handler per method. A known path asked with
 * another method answers 405 method_not_allowed with an Allow header, rather
 * than the router's 404. HEAD is answered wherever GET is (RFC 9110 9.3.2);
 * the server sends its headers without the body.
 */
export function defineRoute(app: H3, path: string, methods: Partial<Record<HTTPMethod, Handler>>): void {
  const allow = [...Object.keys(methods), ...(methods.GET && !methods.HEAD ? ['HEAD'] : [])].join(', ');
  getOrInsert(registered, app, () => []).push({ path, methods: Object.keys(methods) as HTTPMethod[] });
  app.all(path, (event) => {
    const method = event.req.method as HTTPMethod;
    if (method === 'HEAD' && !methods.HEAD && methods.GET) return answerHead(methods.GET, event);
    const handler = methods[method];
    if (!handler) {
      event.res.headers.set('allow', allow);
      throw new ApiError('method_not_allowed', `${event.req.method} is not allowed here; use ${allow}`);
    }
    return handler(event);
  });
}

/**
 * HEAD as GET without the body. A streamed body is cancelled rather than left
 * holding the connection: a web stream, or a pipe-able body such as SseBody,
 * which h3 would drop unpiped, its stream never closed (its slot held).
 */
async function answerHead(get: Handler, event: H3Event): Promise<unknown> {
  const result = await get(event);
  if (isAbortable(result)) {
    await discardAnswer(result);
    return new Response(null, { status: event.res.status ?? 200, headers: event.res.headers });
  }
  if (!(result instanceof Response)) return result; // serialised by h3; the server sends no body for HEAD
  await discardAnswer(result);
  return new Response(null, { status: result.status, statusText: result.statusText, headers: result.headers });
}

/** Lets go of an answer that will not be sent: a streamed body is closed, so it holds no stream slot. */
export async function discardAnswer(answer: unknown): Promise<void> {
  if (isAbortable(answer)) answer.abort();
  else if (answer instanceof Response) await answer.body?.cancel();
}

function isAbortable(result: unknown): result is { abort(): void } {
  return typeof result === 'object' && result !== null && typeof (result as { abort?: unknown }).abort === 'function';
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
