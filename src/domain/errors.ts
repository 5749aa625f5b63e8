// Every failure a client or an operator can cause is an ApiError: a spec error
// code with its HTTP status. The HTTP layer renders it as
// {error:{code,message,request_id}}; the CLI prints its message on one line.
export const ERROR_STATUS = {
  validation_error: 400,
  invalid_currency: 400,
  invalid_amount: 400,
  api_key_invalid: 401,
  api_key_revoked: 401,
  api_key_wrong_env: 401,
  auth_required: 401,
  auth_totp_required: 401,
  billing_overdue: 402,
  auth_account_suspended: 403,
  auth_email_not_verified: 403,
  test_mode_only: 403,
  not_found: 404,
  method_not_allowed: 405,
  no_active_xpub: 409,
  gap_limit_exceeded: 409,
  idempotency_conflict: 409,
  invoice_not_cancellable: 409,
  invoice_already_paid: 409,
  invoice_not_paid: 409,
  invoice_expired: 410,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  upgrade_required: 426,
  rate_limited: 429,
  chain_syncing: 503,
  disk_full: 503,
  database_unavailable: 503,
  rates_unavailable: 503,
  stream_limit_reached: 503,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra fields rendered inside `error` (e.g. retry_after_seconds, param). */
  readonly extra: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.extra = extra;
  }
}

/** A validation_error that names the offending field (spec 2.1 rule 1). */
export function invalidField(param: string, message: string): ApiError {
  return new ApiError('validation_error', message, { param });
}

/** not_found for an invoice id, unknown or not the caller's alike (never leak existence); cut to 64 characters. */
export function invoiceNotFound(id: string): ApiError {
  return new ApiError('not_found', `no invoice ${id.slice(0, 64)}`);
}

/** A field or query parameter Till does not take: named, cut to 64 characters (the client chose its length). */
export function unknownName(kind: 'field' | 'query parameter', name: string): ApiError {
  const shown = name.slice(0, 64);
  return invalidField(shown, `unknown ${kind} "${shown}"`);
}
