// Webhook signatures: X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]
// v1 = lower-case hex HMAC-SHA256 over `${t}.${raw body}`, keyed with the UTF-8
// bytes of the whole secret string (`whsec_...` included), exactly as Stripe
// keys its `whsec_` secrets, so Stripe's SDKs verify Till's deliveries too.
//
// This file imports nothing but node:crypto on purpose: merchants may copy it
// into their receiver as it is.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Service-Signature';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type VerifyFailure = 'missing_header' | 'malformed_header' | 'timestamp_outside_tolerance' | 'no_matching_signature';
export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: VerifyFailure };

export interface VerifyOptions {
  /** Largest accepted |now - t| in seconds, both directions. Default 300. */
  toleranceSeconds?: number;
  /** Current time, epoch milliseconds. */
  now: number;
}

/** The X-Service-Signature value for `body`: one v1 per secret, in the order given (current first). */
export function signPayload(body: string, secrets: string[], unixSeconds: number): string {
  requireSecrets(secrets);
  if (!Number.isSafeInteger(unixSeconds) || unixSeconds < 0) {
    throw new RangeError(`unixSeconds must be a non-negative integer, got ${unixSeconds}`);
  }
  const signatures = secrets.map((secret) => `v1=${computeSignature(secret, unixSeconds, body)}`);
  return [`t=${unixSeconds}`, ...signatures].join(',');
}

/**
 * Checks an X-Service-Signature header against the raw request body (the bytes
 * as received, before any JSON parsing). Accepts a signature made with any of
 * `secrets` (secret rotation). Never throws for a bad request, only for a
 * caller mistake (no secrets, bad options).
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  header: string | null | undefined,
  secrets: string[],
  opts: VerifyOptions,
): VerifyResult {
  requireSecrets(secrets);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new RangeError(`toleranceSeconds must be >= 0, got ${tolerance}`);
  if (!Number.isFinite(opts.now)) throw new RangeError(`now must be epoch milliseconds, got ${opts.now}`);

  if (header == null || header.trim() === '') return { ok: false, reason: 'missing_header' };
  const parsed = parseSignatureHeader(header);
  if (parsed === null) return { ok: false, reason: 'malformed_header' };

  const candidates = parsed.signatures.map((hex) => Buffer.from(hex, 'utf8'));
  const matched = secrets.some((secret) => {
    const expected = Buffer.from(computeSignature(secret, parsed.timestamp, rawBody), 'utf8');
    // No early exit over candidates: every comparison runs, each in constant time.
    let found = false;
    for (const candidate of candidates) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) found = true;
    }
    return found;
  });
  if (!matched) return { ok: false, reason: 'no_matching_signature' };

  // Checked after the signature (as Stripe does): a stale but authentic event
  // then says "clock or replay", a forged one says "no matching signature".
  const nowSeconds = Math.floor(opts.now / 1000);
  if (Math.abs(nowSeconds - parsed.timestamp) > tolerance) return { ok: false, reason: 'timestamp_outside_tolerance' };
  return { ok: true, timestamp: parsed.timestamp };
}

function computeSignature(secret: string, unixSeconds: number, body: string | Uint8Array): string {
  // Body bytes go in as received; a string body is UTF-8 encoded (what the wire carried).
  return createHmac('sha256', secret).update(`${unixSeconds}.`, 'utf8').update(body).digest('hex');
}

// Comma-separated key=value pairs. Like Stripe's parser: pairs in any order,
// unknown keys (v0, future schemes) ignored. Stricter than Stripe's: t must be
// digits only and appear exactly once. More tolerant: spaces around a pair are
// allowed (it is still the signature that decides).
function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const pair of header.split(',')) {
    const item = pair.trim();
    const eq = item.indexOf('=');
    if (eq === -1) continue;
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') {
      if (timestamp !== null || !/^\d{1,15}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  if (timestamp === null || signatures.length === 0) return null;
  return { timestamp, signatures };
}

function requireSecrets(secrets: string[]): void {
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === '')) {
    throw new TypeError('at least one non-empty webhook secret is required');
  }
}
