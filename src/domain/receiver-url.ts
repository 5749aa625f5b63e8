import { invalidField } from './errors.ts';

/** The longest URL a webhook endpoint or an invoice's callback_url may have. */
export const RECEIVER_URL_MAX_LENGTH = 2048;

const SPACE_OR_CONTROL = /[\u0000-\u0020\u007f-\u009f]/;

/**
 * Where Till POSTs webhooks (an endpoint's url, an invoice's callback_url):
 * an absolute http(s) URL, normalised. A user name or password in it is
 * refused: it would be stored and shown back in the clear, and a receiver
 * checks the delivery's signature instead.
 */
export function parseReceiverUrl(field: string, value: unknown): string {
  const bad = () => invalidField(field, `${field} must be an absolute http(s) URL of at most ${RECEIVER_URL_MAX_LENGTH} characters`);
  if (typeof value !== 'string' || value.length > RECEIVER_URL_MAX_LENGTH) throw bad();
  // The URL parser drops these silently (tabs and newlines anywhere, spaces and controls at
  // the ends) or escapes them: a URL that is not the one typed is refused, not stored.
  if (SPACE_OR_CONTROL.test(value)) {
    throw invalidField(field, `${field} must not contain spaces or control characters: percent-encode them (a space is %20)`);
  }
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
  // Percent-encoding (of non-ASCII paths, say) can make it longer than what was sent.
  const normalised = url.toString();
  if (normalised.length > RECEIVER_URL_MAX_LENGTH) throw bad();
  return normalised;
}
