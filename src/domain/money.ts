// Money rules. Fiat is integer cents, bitcoin is integer sats, rates are integer
// cents per BTC. Decimals are parsed as text and converted with integer (BigInt)
// arithmetic, rounding half up; no float ever touches an amount.
import { ApiError, invalidField } from './errors.ts';

export const SATS_PER_BTC = 100_000_000;

/**
 * Largest fiat amount accepted: USD 1,000,000,000.00. Far above any real
 * invoice, and 1e11 cents stays well inside Number.MAX_SAFE_INTEGER.
 */
export const MAX_AMOUNT_CENTS = 100_000_000_000;

/**
 * Bounds for a USD per BTC rate: USD 1.00 to USD 100,000,000.00. Wide enough
 * for any market, narrow enough to catch a provider answering in the wrong
 * unit (sats, cents) or a garbled number.
 */
export const MIN_RATE_CENTS = 100;
export const MAX_RATE_CENTS = 10_000_000_000;

/** Every bitcoin there will ever be; no invoice can ask for more. */
export const MAX_SATS = 21_000_000 * SATS_PER_BTC;

// Plain decimals only: no sign, exponent, spaces, hex, or leading zeros.
// Integer digits are capped so BigInt never sees an absurd string.
export const USD_AMOUNT = /^(0|[1-9]\d{0,9})(?:\.(\d{1,2}))?$/;
// Any number of digits: a price too large is refused by the range, saying so,
// and only the integer part and three decimals ever reach BigInt.
const PROVIDER_PRICE = /^(0|[1-9]\d*)(?:\.(\d+))?$/;
const RATE_INTEGER_DIGITS = String(MAX_RATE_CENTS / 100).length;

/**
 * A fiat amount from the API, as integer cents. Accepts a JSON number or a
 * decimal string with at most 2 decimal places, > 0, at most MAX_AMOUNT_CENTS.
 * A number is judged by its shortest decimal form (String(n)), so 12.345 and
 * float artefacts such as 0.1 + 0.2 are rejected rather than silently rounded.
 */
export function parseUsdAmount(value: unknown): number {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalidField('amount', 'amount must be a finite number');
    // From 1e21 on String() writes an exponent, which the decimal form below would call malformed.
    if (value * 100 > MAX_AMOUNT_CENTS) throw amountTooLarge();
    text = String(value);
  } else if (typeof value === 'string') {
    text = value;
  } else {
    throw invalidField('amount', 'amount must be a number or a decimal string such as "12.50"');
  }
  const match = USD_AMOUNT.exec(text);
  if (!match) {
    // More integer digits than USD_AMOUNT takes: a well-formed amount, too large.
    if (/^[1-9]\d{10,}(?:\.\d{1,2})?$/.test(text)) throw amountTooLarge();
    throw invalidField(
      'amount',
      'amount must be a positive decimal with at most 2 decimal places, such as "12.50"',
    );
  }
  const cents = BigInt(match[1]!) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
  if (cents <= 0n) throw invalidField('amount', 'amount must be greater than 0');
  if (cents > BigInt(MAX_AMOUNT_CENTS)) throw amountTooLarge();
  return Number(cents);
}

function amountTooLarge(): ApiError {
  return invalidField('amount', `amount must be at most ${formatCents(MAX_AMOUNT_CENTS)}`);
}

/** Integer cents as the API's decimal string: 1250 -> "12.50". */
export function formatCents(cents: number): string {
  assertNonNegativeInteger(cents, 'cents');
  const rest = cents % 100;
  return `${(cents - rest) / 100}.${String(rest).padStart(2, '0')}`;
}

/**
 * A provider's USD price for one BTC, as integer cents ("97123.4" -> 9712340).
 * Any number of decimals; beyond 2 rounds half up. Throws on anything that is
 * not a plain positive decimal within MIN_RATE_CENTS..MAX_RATE_CENTS.
 */
export function parseRateToCents(value: string | number): number {
  const text = typeof value === 'number' ? String(value) : value;
  const match = typeof text === 'string' ? PROVIDER_PRICE.exec(text) : null;
  if (!match) throw new Error(`rate ${describe(value)} is not a plain decimal number`);
  const decimals = match[2] ?? '';
  if (match[1]!.length > RATE_INTEGER_DIGITS) throw rateOutsideRange(value);
  let cents = BigInt(match[1]!) * 100n + BigInt(decimals.slice(0, 2).padEnd(2, '0'));
  // Half up: the third decimal decides; any digits after it only add to it.
  if (decimals.length > 2 && decimals.charCodeAt(2) >= 0x35 /* '5' */) cents += 1n;
  if (cents < BigInt(MIN_RATE_CENTS) || cents > BigInt(MAX_RATE_CENTS)) throw rateOutsideRange(value);
  return Number(cents);
}

function rateOutsideRange(value: string | number): Error {
  return new Error(
    `rate ${describe(value)} is outside ${formatCents(MIN_RATE_CENTS)}..${formatCents(MAX_RATE_CENTS)} USD per BTC`,
  );
}

/**
 * Sats for a fiat amount at a rate: round_half_up(cents * 1e8 / rate).
 * Returns 0 when the amount is too small to be worth one sat (the caller turns
 * that into invalid_amount); throws invalid_amount above 21 million BTC.
 */
export function centsToSats(amountCents: number, rateCentsPerBtc: number): number {
  assertNonNegativeInteger(amountCents, 'amountCents');
  assertNonNegativeInteger(rateCentsPerBtc, 'rateCentsPerBtc');
  if (rateCentsPerBtc === 0) throw new RangeError('rateCentsPerBtc must be greater than 0');
  const rate = BigInt(rateCentsPerBtc);
  const scaled = BigInt(amountCents) * BigInt(SATS_PER_BTC);
  const quotient = scaled / rate;
  const sats = (scaled % rate) * 2n >= rate ? quotient + 1n : quotient;
  if (sats > BigInt(MAX_SATS)) {
    throw new ApiError('invalid_amount', 'amount is more than 21,000,000 BTC at the current rate', { param: 'amount' });
  }
  return Number(sats);
}

/**
 * Sats as a BTC decimal with all 8 places ("0.00012345"), for BIP21
 * `amount=` and display.
 */
export function satsToBtcString(sats: number): string {
  assertNonNegativeInteger(sats, 'sats');
  const rest = sats % SATS_PER_BTC;
  return `${(sats - rest) / SATS_PER_BTC}.${String(rest).padStart(8, '0')}`;
}

// Internal callers pass integers; anything else is a bug, not user input.
function assertNonNegativeInteger(value: number, name: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(value)}`);
  }
}

// Quote a bad value in an error without echoing a megabyte of garbage.
function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * A BTC amount as bitcoind prints it (a JSON number such as 0.00012345, read
 * through its decimal form, or a string) to integer sats. Throws for anything
 * else: more than 8 decimals, negative, exponent text, over 21M BTC.
 */
export function btcToSats(value: number | string): number {
  const text = typeof value === 'number' ? decimalOf(value) : value;
  const m = /^(\d{1,8})(?:\.(\d{1,8}))?$/.exec(text);
  if (!m) throw new Error(`not a BTC amount: ${JSON.stringify(value).slice(0, 40)}`);
  const sats = BigInt(m[1]!) * 100_000_000n + BigInt((m[2] ?? '').padEnd(8, '0'));
  if (sats > BigInt(MAX_SATS)) throw new Error('BTC amount above 21 million');
  return Number(sats);
}

/**
 * A number as plain decimal text: its 8 fixed places when they are the number
 * exactly (String() writes bitcoind's 0.00000050 as 5e-7), else String()'s
 * form, which a ninth decimal makes one the caller refuses.
 */
function decimalOf(n: number): string {
  const fixed = n.toFixed(8);
  return Number(fixed) === n ? fixed : String(n);
}
