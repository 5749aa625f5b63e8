import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toIso } from '../../src/clock.ts';

// toIso keeps the last two times it formatted: asked in any order, each time is still its own.
const valid: Array<[number, string]> = [
  [0, '1970-01-01T00:00:00.000Z'],
  [1_795_397_452_123, '2026-11-23T01:30:52.123Z'],
  [1_795_397_452_123 + 3_600_000, '2026-11-23T02:30:52.123Z'],
  [1_795_397_452_124, '2026-11-23T01:30:52.124Z'],
];

test('toIso: every time formatted as its own, in any order and repeated', () => {
  for (const order of [[0, 1, 2, 3], [1, 2, 1, 2, 1], [3, 3, 0, 3, 2, 1, 0], [2, 1, 0, 1, 2, 3]]) {
    for (const i of order) assert.equal(toIso(valid[i]![0]), valid[i]![1], `${order}: ${i}`);
  }
});

test('toIso: a time no Date can hold is refused every time, never answered from what was kept', () => {
  toIso(0);
  for (let i = 0; i < 2; i++) assert.throws(() => toIso(8.64e15 + 1), RangeError);
  assert.throws(() => toIso(Number.NaN), RangeError);
});
