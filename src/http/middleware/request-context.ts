import { randomUUID } from 'node:crypto';
import type { H3Event, Middleware } from 'h3';
import { fixedFieldsLogger, type Logger } from '../../log.ts';
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

/**
 * Gives every request an id (X-Request-Id and error.request_id are the same
 * UUID), turns every thrown error into the spec's envelope, and writes one log
 * line per request: method, path, status, duration, key id — never a secret.
 */
export function requestContext(logger: Logger): Middleware {
  const requestLog = fixedFieldsLogger(logger);
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
      requestLog.info({
        req_id: requestId,
        method: event.req.method,
        path: event.url.pathname,
        status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        key_id: event.context.apiKeyId,
      }, 'request');
    }
  };
}
