import { randomUUID } from 'node:crypto';
import { getWebSocketHooks } from 'crossws';
import type { IncomingMessage } from 'node:http';
import type { H3Event, Middleware } from 'h3';
import { createLineLogger, type Logger } from '../../log.ts';
import { ApiError } from '../../domain/errors.ts';
import { errorResponse, toApiError } from '../errors.ts';
import { wasAnsweredByClientError } from '../internal/client-error.ts';
import { discardAnswer } from '../internal/route.ts';
import { sendJson } from '../internal/send-json.ts';
import { isPublicPath, PUBLIC_CORS_HEADERS } from './cors.ts';

declare module 'h3' {
  interface H3EventContext {
    requestId?: string;
    /** Id of the API key that authenticated the request, for the log line. */
    apiKeyId?: string;
    /** The route answers without reading the database: its answer goes out even after a failed fdatasync. */
    readsNoData?: boolean;
  }
}

export function getRequestId(event: H3Event): string {
  return event.context.requestId ?? 'unknown';
}

export interface RequestLogLine {
  requestId: string;
  method: string;
  path: string;
  status: number;
  /** performance.now() when the request arrived. */
  started: number;
  keyId: string | undefined;
}

export type RequestLog = (line: RequestLogLine) => void;

/** The one log line of a request: method, path, status, duration, key id — never a secret. */
export function createRequestLog(logger: Logger): RequestLog {
  const requestLog = createLineLogger(logger, 'request');
  return (line) => {
    requestLog({
      req_id: line.requestId,
      method: line.method,
      path: line.path,
      status: line.status,
      ms: Math.round((performance.now() - line.started) * 10) / 10,
      key_id: line.keyId,
    });
  };
}

/**
 * Gives every request an id (X-Request-Id and error.request_id are the same
 * UUID), turns every thrown error into the spec's envelope, and writes the
 * request's log line. An answer waits for `durable` (the write queue's): what
 * it read may come from a commit whose fdatasync has not returned yet. If that
 * fdatasync failed, the answer is dropped for the error, unless the route
 * read nothing from the database (`readsNoData`: /healthz, which says so).
 */
export function requestContext(logger: Logger, log: RequestLog, durable: () => Promise<void> | null): Middleware {
  return async (event, next) => {
    const started = performance.now();
    const requestId = randomUUID();
    event.context.requestId = requestId;
    event.res.headers.set('x-request-id', requestId);
    const answerError = (err: unknown, keep: (header: string) => boolean): Response => {
      const apiError = apiErrorOf(err, requestId, logger);
      // Under /pay/ even an error raised before the CORS middleware ran (no Host header) is readable by a page.
      const headers: Record<string, string> = isPublicPath(event.url.pathname) ? { ...PUBLIC_CORS_HEADERS } : {};
      event.res.headers.forEach((v, k) => keep(k) && (headers[k] = v));
      return errorResponse(apiError, requestId, headers);
    };
    const nodeReq = nodeRequestOf(event);
    const rewritten = rewrittenPath(nodeReq);
    let answer: unknown;
    try {
      assertHostHeader(nodeReq);
      if (rewritten !== null) throw new ApiError('not_found', `no route for ${event.req.method} ${rewritten}`);
      answer = await next();
      // A route's object is serialized here: every JSON answer says its Content-Type one way (h3's own is another).
      if (isPlainData(answer)) answer = sendJson(event, JSON.stringify(answer), event.res.status ?? 200);
    } catch (err) {
      answer = answerError(err, () => true);
    }
    // The answer, whichever it is, goes out only after this wait.
    const pending = durable();
    if (pending) {
      try {
        await pending;
      } catch (err) {
        if (!event.context.readsNoData) {
          await discardAnswer(answer);
          // Only CORS is kept: the dropped answer's Location or Idempotent-Replayed would describe what it said.
          answer = answerError(err, (header) => header.startsWith('access-control-') || header === 'vary');
        }
      }
    }
    let status = answer instanceof Response ? answer.status : (event.res.status ?? 200);
    // A WebSocket route answers a placeholder 426 that crossws replaces with the 101.
    if (status === 426 && getWebSocketHooks(event.req)) status = 101;
    // A body that stalled past its deadline was answered, and logged, by the server's clientError listener.
    if (!wasAnsweredByClientError(nodeReq)) {
      log({ requestId, method: event.req.method, path: rewritten ?? event.url.pathname, status, started, keyId: event.context.apiKeyId });
    }
    return answer;
  };
}

/** What the envelope says of anything thrown while answering a request; our own bug is logged, with the request id. */
export function apiErrorOf(err: unknown, requestId: string, logger: Logger): ApiError {
  const apiError = toApiError(err);
  if (apiError.status >= 500 && apiError.code === 'internal_error') logger.error({ req_id: requestId, err }, 'unhandled error');
  return apiError;
}

function isPlainData(value: unknown): value is object {
  return typeof value === 'object' && value !== null && (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype);
}

/** The request as Node read it: absent when the app is called in-process. */
export function nodeRequestOf(event: H3Event): IncomingMessage | undefined {
  return (event.req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
}

/**
 * The request's path as sent, if the URL parser rewrote it: a `\` read as
 * `/`, a `.` or `..` segment (`%2e` too) resolved. Routed as rewritten,
 * `/pay/..\healthz` reached /healthz and /v1 through a proxy that forwards
 * only /pay/ and /checkout/ (docs/CHECKOUT.md) as sent, as nginx does with
 * `proxy_pass` and no URI. Clients send paths normalised (browsers, curl):
 * such a path is no route.
 */
function rewrittenPath(req: IncomingMessage | undefined): string | null {
  const target = req?.url;
  if (target === undefined) return null;
  const query = target.indexOf('?');
  const path = query < 0 ? target : target.slice(0, query);
  return REWRITTEN_BY_PARSER.test(path) ? path : null;
}

const REWRITTEN_BY_PARSER = /\\|(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i;

/**
 * HTTP/1.1 requires Host (RFC 9112 3.2). Node refuses its absence with a bare
 * 400 unless told not to (src/http/server.ts); here it gets the envelope.
 */
function assertHostHeader(req: IncomingMessage | undefined): void {
  if (req?.httpVersion === '1.1' && req.headers.host === undefined) {
    throw new ApiError('validation_error', 'the Host header is missing (HTTP/1.1 requires it)');
  }
}
