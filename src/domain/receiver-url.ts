import { invalidField } from './errors.ts';

/** The longest URL a webhook endpoint or an invoice's callback_url may have. */
export const RECEIVER_URL_MAX_LENGTH = 2048;

/**
 * Where Till POSTs webhooks (an endpoint's url, an invoice's callback_url):
 * an absolute http(s) URL, normalised. A user name or password in it is
 * refused: it would be stored and shown back in the clear, and a receiver
 * checks the delivery's signature instead.
 */
export function parseReceiverUrl(field: string, value: unknown): string {
  const bad = () => invalidField(field, `${field} must be an absolute http(s) URL of at most ${RECEIVER_URL_MAX_LENGTH} characters`);
  if (typeof value !== 'string' || value.length > RECEIVER_URL_MAX_LENGTH) throw bad();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad();
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw bad();
  if (url.username || url.password) {
    throw invalidField(field, `${field} must not carry a user name or password: they would be stored in the clear; check each delivery's X-Service-Signature instead`);
  }
  return url.toString();
}
