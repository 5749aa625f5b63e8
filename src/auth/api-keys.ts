import { hash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../ids.ts';
import type { Env } from '../domain/store.ts';

// API keys: svc_live_ / svc_test_ + 32 base62 characters (~190 bits). Only the
// SHA-256 of the whole key and its last 4 characters are stored; the key is
// shown once. A fast hash is right here: the secret is random and long, so
// there is nothing for a slow hash to protect against.
const SECRET_LENGTH = 32;
const KEY_PATTERN = /^svc_(live|test)_([0-9A-Za-z]{32})$/;

export const KEY_PREFIX: Record<Env, string> = { live: 'svc_live_', test: 'svc_test_' };

export function generateApiKey(env: Env): string {
  return KEY_PREFIX[env] + randomBase62(SECRET_LENGTH);
}

/** The stored hash of a key, in hex: every API request computes it, and the one-shot hex digest is the cheapest form. */
export function hashApiKeyHex(key: string): string {
  return hash('sha256', key, 'hex');
}

export function hashApiKey(key: string): Buffer {
  return Buffer.from(hashApiKeyHex(key), 'hex');
}

/** Whether the key has the shape of one Till mints (its environment is read from the stored key, not from this). */
export function isWellFormedApiKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Extracts the key from `Authorization: Bearer <key>`; null when absent or not Bearer. */
export function readBearer(header: string | null | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  return m ? m[1]! : null;
}

/** Shown in lists and logs instead of the key: prefix and last four. */
export function maskApiKey(env: Env, last4: string): string {
  return `${KEY_PREFIX[env]}…${last4}`;
}
