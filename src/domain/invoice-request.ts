import { ApiError, invalidField, unknownName } from './errors.ts';
import { MAX_SATS, parseUsdAmount } from './money.ts';
import { parseReceiverUrl } from './receiver-url.ts';

// The body of POST /v1/invoices (spec 2.1), checked field by field. Unknown
// fields are refused (as Stripe does): a typo such as "amount_sat" must not
// silently create an invoice for something else.

export const METADATA_LIMITS = { maxKeys: 50, maxKeyLength: 40, maxValueLength: 255 } as const;
export const EXPIRES_IN_MINUTES = { min: 5, max: 120 } as const;

const FIELDS = new Set(['amount', 'currency', 'amount_sats', 'expires_in_minutes', 'callback_url', 'metadata']);

export type InvoiceRequest =
  | { kind: 'sats'; amountSats: number; expiresInMinutes?: number; callbackUrl?: string; metadata: Record<string, string> }
  | { kind: 'fiat'; amountCents: number; currency: 'USD'; expiresInMinutes?: number; callbackUrl?: string; metadata: Record<string, string> };

export function parseInvoiceRequest(body: Record<string, unknown>): InvoiceRequest {
  for (const key of Object.keys(body)) {
    if (!FIELDS.has(key)) throw unknownName('field', key);
  }
  const has = (k: string) => body[k] !== undefined && body[k] !== null;
  const fiatGiven = has('amount') || has('currency');
  if (has('amount_sats') && has('currency') && !has('amount')) {
    throw invalidField('currency', 'currency goes with amount; amount_sats is in sats and takes no currency');
  }
  if (fiatGiven && has('amount_sats')) {
    throw invalidField('amount_sats', 'give either amount_sats or amount with currency, not both');
  }
  if (!fiatGiven && !has('amount_sats')) {
    throw invalidField('amount_sats', 'amount_sats is required (or amount with currency)');
  }
  const common = {
    expiresInMinutes: parseExpiresIn(body.expires_in_minutes),
    callbackUrl: parseCallbackUrl(body.callback_url),
    metadata: parseMetadata(body.metadata),
  };
  if (!fiatGiven) return { kind: 'sats', amountSats: parseAmountSats(body.amount_sats), ...common };
  if (!has('amount')) throw invalidField('amount', 'amount is required with currency');
  if (!has('currency')) throw invalidField('currency', 'currency is required with amount');
  return { kind: 'fiat', ...parseFiat(body.amount, body.currency), ...common };
}

/** A whole, positive number of sats, at most 21 million bitcoin: invalid_amount (validation_error for another type; 1e999, read as infinity, is out of range like any number). */
export function parseAmountSats(v: unknown): number {
  if (typeof v !== 'number' || Number.isNaN(v)) throw invalidField('amount_sats', 'amount_sats must be a whole number of sats');
  if (v <= 0) throw new ApiError('invalid_amount', 'amount_sats must be greater than 0', { param: 'amount_sats' });
  if (v > MAX_SATS) throw new ApiError('invalid_amount', 'amount_sats is more than 21 million bitcoin', { param: 'amount_sats' });
  if (!Number.isInteger(v)) throw new ApiError('invalid_amount', 'amount_sats must be a whole number of sats', { param: 'amount_sats' });
  return v;
}

function parseFiat(amount: unknown, currency: unknown): { amountCents: number; currency: 'USD' } {
  if (typeof currency !== 'string') throw invalidField('currency', 'currency must be a currency code string');
  // ASCII letters in any case: toUpperCase() would also turn "uſd" into USD.
  if (!/^usd$/i.test(currency)) {
    throw new ApiError('invalid_currency', `currency "${currency.slice(0, 16)}" is not supported; only USD is`, { param: 'currency' });
  }
  // A zero or negative price is a wrong amount, not a malformed one.
  const numeric = typeof amount === 'number' ? amount : typeof amount === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(amount) ? Number(amount) : NaN;
  if (numeric <= 0) throw new ApiError('invalid_amount', 'amount must be greater than 0', { param: 'amount' });
  return { amountCents: parseUsdAmount(amount), currency: 'USD' };
}

function parseExpiresIn(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  const { min, max } = EXPIRES_IN_MINUTES;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalidField('expires_in_minutes', `expires_in_minutes must be a whole number from ${min} to ${max}`);
  }
  return v;
}

function parseCallbackUrl(v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : parseReceiverUrl('callback_url', v);
}

function parseMetadata(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidField('metadata', 'metadata must be an object of string values');
  const entries = Object.entries(v as Record<string, unknown>);
  const { maxKeys, maxKeyLength, maxValueLength } = METADATA_LIMITS;
  if (entries.length > maxKeys) throw invalidField('metadata', `metadata may have at most ${maxKeys} keys`);
  for (const [key, value] of entries) {
    // Named by its dotted path, as a name given twice is (src/http/internal/duplicate-key.ts); a long key cut.
    const shown = [...key].length > maxKeyLength ? `${[...key].slice(0, maxKeyLength).join('')}…` : key;
    const param = `metadata.${shown}`;
    if (key === '') throw invalidField('metadata', `metadata keys must be 1 to ${maxKeyLength} characters; one is empty`);
    if (shown !== key) throw invalidField(param, `${param}: metadata keys must be 1 to ${maxKeyLength} characters`);
    if (typeof value !== 'string') throw invalidField(param, `${param} must be a string`);
    if ([...value].length > maxValueLength) throw invalidField(param, `${param} is longer than ${maxValueLength} characters`);
  }
  // fromEntries defines own properties, so a "__proto__" key stays plain data.
  return Object.fromEntries(entries) as Record<string, string>;
}
