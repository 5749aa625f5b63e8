import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupDigits, groupedFiat } from '../../../assets/checkout/describe.js';

// The checkout's number grouping (assets/checkout/describe.js), which both the
// page's script and the page rendered without JavaScript show: by hand, not
// Intl, so these pin it to what en-US writes.

const grouped: Array<[number | string, string]> = [
  [0, '0'],
  [7, '7'],
  [999, '999'],
  [1000, '1,000'],
  [10_000, '10,000'],
  [123_456, '123,456'],
  [1_234_567, '1,234,567'],
  [2_100_000_000_000_000, '2,100,000,000,000,000'],
  ['1234567', '1,234,567'],
];

test('groupDigits: thousands by commas, as Intl en-US groups them', () => {
  const intl = new Intl.NumberFormat('en-US');
  for (const [n, want] of grouped) {
    assert.equal(groupDigits(n), want, String(n));
    assert.equal(groupDigits(n), intl.format(BigInt(n)), `${n} as Intl writes it`);
  }
});

test('groupedFiat: the whole part grouped, the cents as the API sent them', () => {
  assert.equal(groupedFiat('1234567.89'), '1,234,567.89');
  assert.equal(groupedFiat('0.05'), '0.05');
  assert.equal(groupedFiat('1000.00'), '1,000.00');
  assert.equal(groupedFiat('12'), '12');
});
