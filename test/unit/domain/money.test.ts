import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../../src/domain/errors.ts';
import {
  MAX_SATS,
  btcToSats,
  centsToSats,
  formatCents,
  parseRateToCents,
  parseUsdAmount,
  satsToBtcString,
} from '../../../src/domain/money.ts';

function isAmountError(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'validation_error' && error.extra.param === 'amount';
}

describe('parseUsdAmount', () => {
  const valid: { input: unknown; cents: number }[] = [
    { input: 12.5, cents: 1250 },
    { input: '12.50', cents: 1250 },
    { input: '12.5', cents: 1250 },
    { input: 19.99, cents: 1999 },
    { input: 0.1, cents: 10 },
    { input: '0.01', cents: 1 },
    { input: 0.01, cents: 1 },
    { input: 1, cents: 100 },
    { input: '7', cents: 700 },
    { input: 1_000_000_000, cents: 100_000_000_000 },
    { input: '1000000000.00', cents: 100_000_000_000 },
  ];
  for (const { input, cents } of valid) {
    test(`accepts ${JSON.stringify(input)} as ${cents} cents`, () => {
      assert.equal(parseUsdAmount(input), cents);
    });
  }

  // What each refusal tells the merchant: a malformed amount is not called too large, nor a large one malformed.
  const ZERO = /^amount must be greater than 0$/;
  const MALFORMED = /^amount must be a positive decimal with at most 2 decimal places/;
  const BIG = /^amount must be at most 1000000000\.00$/;
  const INF = /^amount must be a finite number$/;
  const TYPE = /^amount must be a number or a decimal string/;
  const invalid: { input: unknown; why: string; says: RegExp }[] = [
    { input: 0, why: 'zero', says: ZERO },
    { input: -0, why: 'negative zero', says: ZERO },
    { input: '0', why: 'zero string', says: ZERO },
    { input: '0.00', why: 'zero with decimals', says: ZERO },
    { input: -1, why: 'negative', says: MALFORMED },
    { input: '-1.00', why: 'negative string', says: MALFORMED },
    { input: 12.345, why: 'three decimals', says: MALFORMED },
    { input: '12.345', why: 'three decimals as string', says: MALFORMED },
    { input: '12.500', why: 'trailing zero third decimal', says: MALFORMED },
    { input: 0.1 + 0.2, why: 'float artefact 0.30000000000000004', says: MALFORMED },
    { input: Number.NaN, why: 'NaN', says: INF },
    { input: Number.POSITIVE_INFINITY, why: 'Infinity', says: INF },
    { input: Number.NEGATIVE_INFINITY, why: '-Infinity', says: INF },
    { input: 1e21, why: 'number printed with an exponent', says: BIG },
    { input: 1e-7, why: 'tiny number printed with an exponent', says: MALFORMED },
    { input: '1e3', why: 'exponent string', says: MALFORMED },
    { input: '1E3', why: 'upper-case exponent', says: MALFORMED },
    { input: 'NaN', why: 'NaN string', says: MALFORMED },
    { input: 'Infinity', why: 'Infinity string', says: MALFORMED },
    { input: ' 12', why: 'leading space', says: MALFORMED },
    { input: '12 ', why: 'trailing space', says: MALFORMED },
    { input: '1 000', why: 'inner space', says: MALFORMED },
    { input: '0x10', why: 'hex', says: MALFORMED },
    { input: '12.', why: 'dot without decimals', says: MALFORMED },
    { input: '.5', why: 'no integer digit', says: MALFORMED },
    { input: '+5', why: 'plus sign', says: MALFORMED },
    { input: '012', why: 'leading zero', says: MALFORMED },
    { input: '1,000', why: 'thousands separator', says: MALFORMED },
    { input: '12,50', why: 'decimal comma', says: MALFORMED },
    { input: '', why: 'empty string', says: MALFORMED },
    { input: '１２', why: 'full-width digits', says: MALFORMED },
    { input: '10000000000.', why: 'eleven digits and a dot', says: MALFORMED },
    { input: '#10000000000', why: 'eleven digits after a sign', says: MALFORMED },
    { input: '10000000000.5x', why: 'eleven digits and a letter', says: MALFORMED },
    { input: 1_000_000_000.01, why: 'above the maximum', says: BIG },
    { input: '1000000000.01', why: 'above the maximum as string', says: BIG },
    { input: '99999999999', why: 'far above the maximum', says: BIG },
    { input: null, why: 'null', says: TYPE },
    { input: undefined, why: 'undefined', says: TYPE },
    { input: true, why: 'boolean', says: TYPE },
    { input: 12n, why: 'bigint', says: TYPE },
    { input: ['12'], why: 'array', says: TYPE },
    { input: { value: '12' }, why: 'object', says: TYPE },
  ];
  for (const { input, why, says } of invalid) {
    test(`rejects ${why}`, () => {
      assert.throws(() => parseUsdAmount(input), (e: ApiError) => isAmountError(e) && says.test(e.message));
    });
  }

  // A well-formed amount above the maximum says so, however many digits it has (a number in any form).
  for (const input of [1_000_000_000.01, 1_000_000_000.125, '1000000000.01', '10000000000', '99999999999.99', 1e20, 1e21, Number.MAX_VALUE, '1' + '0'.repeat(40)]) {
    test(`names the maximum for ${String(input).slice(0, 20)}`, () => {
      assert.throws(() => parseUsdAmount(input), (e: ApiError) => isAmountError(e) && e.message === 'amount must be at most 1000000000.00');
    });
  }
});

describe('formatCents', () => {
  const valid: [number, string][] = [
    [0, '0.00'],
    [5, '0.05'],
    [50, '0.50'],
    [1250, '12.50'],
    [100, '1.00'],
    [100_000_000_000, '1000000000.00'],
  ];
  for (const [cents, text] of valid) {
    test(`${cents} -> ${text}`, () => assert.equal(formatCents(cents), text));
  }
  for (const bad of [-1, 1.5, Number.NaN, 2 ** 53]) {
    test(`rejects ${bad}`, () => assert.throws(() => formatCents(bad), RangeError));
  }
  test('round-trips with parseUsdAmount', () => {
    for (const text of ['0.01', '12.50', '999.99', '1000000000.00']) {
      assert.equal(formatCents(parseUsdAmount(text)), text);
    }
  });
});

describe('parseRateToCents', () => {
  const valid: { input: string | number; cents: number; why: string }[] = [
    { input: '97123.4', cents: 9_712_340, why: 'one decimal' },
    { input: '97123.40000', cents: 9_712_340, why: "Kraken's five decimals" },
    { input: '97123', cents: 9_712_300, why: 'no decimals' },
    { input: '97123.405', cents: 9_712_341, why: 'exactly half a cent rounds up' },
    { input: '97123.404999999', cents: 9_712_340, why: 'just below half a cent rounds down' },
    { input: '97123.995', cents: 9_712_400, why: 'rounding carries into the dollars' },
    { input: 97123.4, cents: 9_712_340, why: 'a JSON number, via its decimal string' },
    { input: '1.00', cents: 100, why: 'the lowest sane rate' },
    { input: '0.995', cents: 100, why: 'rounds up onto the lowest sane rate' },
    { input: '100000000', cents: 10_000_000_000, why: 'the highest sane rate' },
  ];
  for (const { input, cents, why } of valid) {
    test(`${why}: ${JSON.stringify(input)} -> ${cents}`, () => assert.equal(parseRateToCents(input), cents));
  }

  const outside: { input: string | number; why: string }[] = [
    { input: '0', why: 'zero' },
    { input: '0.00', why: 'zero with decimals' },
    { input: '0.004', why: 'rounds to zero' },
    { input: '0.99', why: 'below USD 1' },
    { input: '100000000.01', why: 'above USD 100M' },
    { input: '100000000.005', why: 'rounds up past USD 100M' },
    { input: '1'.repeat(31), why: '31 integer digits' },
    { input: '1'.repeat(500), why: 'absurdly long' },
  ];
  for (const { input, why } of outside) {
    test(`rejects ${why} as outside the range`, () =>
      assert.throws(() => parseRateToCents(input), /is outside 1\.00\.\.100000000\.00 USD per BTC/));
  }
  test('reads a price with more decimals than any provider sends', () => {
    assert.equal(parseRateToCents(`97123.40${'9'.repeat(30)}`), 9_712_341);
  });

  const notDecimal: { input: string | number; why: string }[] = [
    { input: '-97000', why: 'negative' },
    { input: '1e5', why: 'exponent' },
    { input: 1e21, why: 'number printed with an exponent' },
    { input: Number.NaN, why: 'NaN number' },
    { input: Number.POSITIVE_INFINITY, why: 'Infinity number' },
    { input: 'NaN', why: 'NaN string' },
    { input: '', why: 'empty' },
    { input: 'abc', why: 'letters' },
    { input: ' 97000', why: 'leading space' },
    { input: '97,000.00', why: 'thousands separator' },
    { input: '0x17AF8', why: 'hex' },
    { input: '097000', why: 'leading zero' },
    { input: '97000.', why: 'dot without decimals' },
  ];
  for (const { input, why } of notDecimal) {
    test(`rejects ${why}`, () => assert.throws(() => parseRateToCents(input), /is not a plain decimal number/));
  }
});

describe('centsToSats', () => {
  // rate 8_000_000 cents ($80,000): 1 cent = exactly 12.5 sats.
  const valid: { cents: number; rate: number; sats: number; why: string }[] = [
    { cents: 1250, rate: 6_500_000, sats: 19_231, why: '$12.50 at $65,000 (19230.77 rounds up)' },
    { cents: 100, rate: 10_000_000, sats: 1_000, why: '$1 at $100,000 exactly' },
    { cents: 1, rate: 8_000_000, sats: 13, why: 'exactly .5 sat rounds up (12.5)' },
    { cents: 3, rate: 8_000_000, sats: 38, why: 'exactly .5 sat rounds up (37.5)' },
    { cents: 1, rate: 8_000_001, sats: 12, why: 'just below .5 sat rounds down (12.4999984)' },
    { cents: 1, rate: 200_000_000, sats: 1, why: 'exactly half a sat becomes 1' },
    { cents: 1, rate: 200_000_001, sats: 0, why: 'just under half a sat rounds to 0' },
    { cents: 1, rate: 10_000_000_000, sats: 0, why: 'a cent at $100M rounds to 0' },
    { cents: 100_000_000_000, rate: 10_000_000_000, sats: 1_000_000_000, why: 'the largest amount at the highest rate' },
    { cents: 2_100_000_000, rate: 100, sats: MAX_SATS, why: 'exactly 21M BTC' },
  ];
  for (const { cents, rate, sats, why } of valid) {
    test(why, () => assert.equal(centsToSats(cents, rate), sats));
  }

  test('more than 21M BTC is invalid_amount, naming the amount', () => {
    assert.throws(
      () => centsToSats(100_000_000_000, 100),
      (error: unknown) =>
        error instanceof ApiError && error.code === 'invalid_amount' && error.extra.param === 'amount' && /more than 21,000,000 BTC/.test(error.message),
    );
  });
  const bad: [number, number][] = [
    [1.5, 100],
    [-1, 100],
    [100, 0],
    [100, 1.5],
    [Number.NaN, 100],
    [100, 2 ** 53],
  ];
  for (const [cents, rate] of bad) {
    test(`rejects non-integer input (${cents}, ${rate})`, () => assert.throws(() => centsToSats(cents, rate), RangeError));
  }
});

describe('satsToBtcString', () => {
  const valid: [number, string][] = [
    [0, '0.00000000'],
    [1, '0.00000001'],
    [12_345, '0.00012345'],
    [100_000_000, '1.00000000'],
    [123_456_789, '1.23456789'],
    [MAX_SATS, '21000000.00000000'],
    [Number.MAX_SAFE_INTEGER, '90071992.54740991'],
  ];
  for (const [sats, text] of valid) {
    test(`${sats} -> ${text}`, () => assert.equal(satsToBtcString(sats), text));
  }
  for (const bad of [-1, 0.5, Number.NaN, 2 ** 53]) {
    test(`rejects ${bad}`, () => assert.throws(() => satsToBtcString(bad), RangeError));
  }
});

// scantxoutset amounts (src/bitcoin/bitcoind.ts): bitcoind prints a JSON number with 8 decimals.
describe('btcToSats', () => {
  const valid: { input: number | string; sats: number }[] = [
    { input: 0.00012345, sats: 12_345 },
    { input: '0.00012345', sats: 12_345 },
    { input: 0.1, sats: 10_000_000 },
    { input: 1, sats: 100_000_000 },
    { input: '21000000', sats: MAX_SATS },
    { input: 20_999_999.99999999, sats: MAX_SATS - 1 },
    { input: 0, sats: 0 },
    // Below 0.000001 a JSON number reads back as 5e-7: still the 50 sats bitcoind printed.
    { input: JSON.parse('0.00000050') as number, sats: 50 },
    { input: JSON.parse('0.00000001') as number, sats: 1 },
  ];
  for (const { input, sats } of valid) {
    test(`reads ${JSON.stringify(input)} as ${sats} sats`, () => assert.equal(btcToSats(input), sats));
  }
  const invalid: { input: number | string; why: string }[] = [
    { input: 0.000000001, why: 'a ninth decimal (a number)' },
    { input: '0.000000001', why: 'a ninth decimal' },
    { input: '1e-8', why: 'exponent text' },
    { input: -0.0000001, why: 'negative' },
    { input: '-1', why: 'negative text' },
    { input: '21000000.00000001', why: 'above 21 million BTC' },
    { input: '123456789', why: 'nine integer digits' },
    { input: '1.', why: 'a dot without decimals' },
    { input: ' 1', why: 'a space' },
    { input: 'x1', why: 'a letter before' },
    { input: '1x', why: 'a letter after' },
  ];
  for (const { input, why } of invalid) {
    test(`refuses ${why}`, () => assert.throws(() => btcToSats(input), /not a BTC amount|above 21 million/));
  }
});
