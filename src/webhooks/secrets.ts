// Webhook signing secrets and the rotation rule (spec 6.3.5: after a rotation
// the previous secret stays valid for 24 hours).
import type { SecretBox } from '../auth/secret-box.ts';
import type { SealedSecrets } from '../db/webhook-endpoints.ts';
import { randomBase62 } from '../ids.ts';

// 43 base62 characters carry 256 bits (43 * log2(62) = 256.03), as much as 32 random bytes.
const SECRET_CHARS = 43;
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
export const PREVIOUS_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;

/**
 * A new secret: `whsec_` + 43 base62 characters (256 bits). Base62 rather than
 * base64 so the secret survives shells, .env files and URLs without quoting.
 * The whole string, prefix included, is the HMAC key.
 */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBase62(SECRET_CHARS);
}

/** A new secret, in clear (shown once) and sealed with no previous one: a new endpoint's or store's, or one replacing a secret that cannot be read. */
export function sealNewSecret(box: SecretBox): { secret: string; sealed: SealedSecrets } {
  const secret = generateWebhookSecret();
  return { secret, sealed: { secret: box.seal(secret), previous: null, previousExpiresAt: null } };
}

export interface SecretState {
  secret: string;
  previousSecret: string | null;
  /** Epoch ms after which previousSecret no longer signs nor verifies. */
  previousSecretExpiresAt: number | null;
}

/**
 * Rotates to a fresh secret; the current one becomes the previous for 24 h.
 * A second rotation inside those 24 h drops the older previous secret at once.
 * `current` null: it cannot be read (a data dir restored without its
 * secret.key), so nothing can sign with it and there is no previous.
 */
export function rotateWebhookSecret(current: string | null, now: number): SecretState {
  if (current === null) return { secret: generateWebhookSecret(), previousSecret: null, previousSecretExpiresAt: null };
  return { secret: generateWebhookSecret(), previousSecret: current, previousSecretExpiresAt: now + PREVIOUS_SECRET_VALIDITY_MS };
}

/** Secrets that sign a delivery sent at `now` (one v1 each), current first. */
export function validSecrets(current: string, previous: string | null, previousExpiresAt: number | null, now: number): string[] {
  const previousValid = previous !== null && previous !== current && previousExpiresAt !== null && now < previousExpiresAt;
  return previousValid ? [current, previous] : [current];
}
