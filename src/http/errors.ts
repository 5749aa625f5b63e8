import { translateDbError } from '../db/errors.ts';
import { ApiError } from '../domain/errors.ts';

/** The spec's error envelope (section 7) as JSON text. */
export function errorBody(err: ApiError, requestId: string): string {
  return JSON.stringify({ error: { code: err.code, message: err.message, request_id: requestId, ...err.extra } });
}

/**
 * A 503 without its own wait says when to try again: the first step of the
 * spec's backoff (7.3: 1 s, 2 s, 4 s, ...), so a generic HTTP client that
 * honours Retry-After does what the spec recommends.
 */
const INFRASTRUCTURE_RETRY_AFTER_SECONDS = 1;

/** The headers of the spec's error envelope. */
export function errorHeaders(err: ApiError, requestId: string): Record<string, string> {
  const retryAfter = err.extra.retry_after_seconds ?? (err.status === 503 ? INFRASTRUCTURE_RETRY_AFTER_SECONDS : undefined);
  return {
    'content-type': 'application/json; charset=utf-8',
    // An error says how things stood for one request (a 404 of an invoice being made, a 503): no cache keeps it.
    'cache-control': 'no-store',
    'x-request-id': requestId,
    ...(typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {}),
    // RFC 9110 15.5.2: a 401 names the scheme it wants.
    ...(err.status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
  };
}

/** The spec's error envelope as a Response. */
export function errorResponse(err: ApiError, requestId: string, headers: Record<string, string> = {}): Response {
  return new Response(errorBody(err, requestId), { status: err.status, headers: { ...headers, ...errorHeaders(err, requestId) } });
}

/**
 * SQLite's infrastructure failures become the spec's retryable 503s wherever
 * they happen (reads too); anything else thrown that is not an ApiError is our
 * bug: a 500 that names only the request id.
 */
export function toApiError(err: unknown): ApiError {
  const translated = translateDbError(err);
  if (translated instanceof ApiError) return translated;
  return new ApiError('internal_error', 'an internal error occurred; the request id is in the server log');
}
