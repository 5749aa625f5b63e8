// The delivery retry schedule (spec 3.2, 6.4, 8) as data, and the pure rules
// the delivery worker applies after each attempt.

/** Per-attempt timeout: connect, send, status line and body all within it. */
export const ATTEMPT_TIMEOUT_MS = 10_000;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Delay before attempt n+2, measured from attempt n+1; index 0 is the first retry. */
export const RETRY_DELAYS_MS: readonly number[] = [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 12 * HOUR, 24 * HOUR];

/** The initial attempt plus one per retry delay: 7. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

export type AttemptOutcome = 'success' | 'retry' | 'failed';

export interface AttemptResult {
  /** HTTP status, when the receiver sent a status line. */
  status?: number;
  /** Network error or timeout, when no status line arrived. */
  error?: string;
}

/**
 * What one attempt's result means.
 * - 2xx: success.
 * - 4xx: failed, never retried (spec 6.4): the receiver understood and refused.
 * - 5xx, network error, timeout: retry.
 * - 3xx: retry. Till does not follow redirects (a redirect could point a signed
 *   event anywhere). A 3xx is not a refusal, and it is often temporary (a
 *   maintenance page, an http->https move mid-deploy); retrying ends, if the
 *   URL stays wrong, in dead_letter, which the merchant can replay after fixing
 *   it, whereas failed would be final. Stripe also retries a redirect as a
 *   failed delivery.
 * - 1xx or anything else: retry.
 * Once a status line arrived it decides, even if reading the body then failed:
 * a receiver that said 200 has acknowledged the event. A body still arriving
 * at the attempt's timeout makes the attempt a timeout (the worker passes no
 * status then: docs/DECISIONS.md).
 */
export function classifyOutcome(result: AttemptResult): AttemptOutcome {
  const { status } = result;
  if (status === undefined || !Number.isInteger(status)) return 'retry';
  if (status >= 200 && status <= 299) return 'success';
  if (status >= 400 && status <= 499) return 'failed';
  return 'retry';
}

/**
 * When to make the next attempt after `attemptsMade` attempts have all failed
 * with a retryable outcome, the last one at `lastAttemptAt` (epoch ms).
 * Null once all 7 attempts are spent: the delivery goes to dead_letter.
 */
export function nextAttemptAt(attemptsMade: number, lastAttemptAt: number): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1 || attemptsMade > MAX_ATTEMPTS) {
    throw new RangeError(`attemptsMade must be an integer from 1 to ${MAX_ATTEMPTS}, got ${attemptsMade}`);
  }
  const delay = RETRY_DELAYS_MS[attemptsMade - 1];
  return delay === undefined ? null : lastAttemptAt + delay;
}
