import { randomUUID } from 'node:crypto';
import type { H3Event, Middleware } from 'h3';
import { createLineLogger, type Logger } from '../../log.ts';
import { errorResponse, toApiError } from '../errors.ts';

declare module 'h3' {
  interface H3EventContext {
    requestId?: string;
    /** Id of the API key that authenticated the request, for the log line. */
    apiKeyId?: string;
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
 * it read may come from a commit whose fdatasync has not returned yet.
 */
export function requestContext(logger: Logger, log: RequestLog, durable: () => Promise<void> | null): Middleware {
  return async (event, next) => {
    const started = performance.now();
    const requestId = randomUUID();
    event.context.requestId = requestId;
    event.res.headers.set('x-request-id', requestId);
    let status = 500;
    try {
      const result = await next();
      status = result instanceof Response ? result.status : (event.res.status ?? 200);
      return result;
    } catch (err) {
      const apiError = toApiError(err);
      if (apiError.status >= 500 && apiError.code === 'internal_error') {
        logger.error({ req_id: requestId, err }, 'unhandled error');
      }
      status = apiError.status;
      const headers: Record<string, string> = {};
      event.res.headers.forEach((v, k) => (headers[k] = v));
      return errorResponse(apiError, requestId, headers);
    } finally {
      // The answer, whichever it is, goes out only after this wait.
      const pending = durable();
      if (pending) await pending;
      log({ requestId, method: event.req.method, path: event.url.pathname, status, started, keyId: event.context.apiKeyId });
    }
  };
}
