import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isId, newId } from '../../src/ids.ts';

// The time part is the millisecond in 10 Crockford base32 digits (lower case), most significant first.
const TIMES: Array<[number, string]> = [
  [0, '0000000000'],
  [31, '000000000z'],
  [32, '0000000010'],
  [1795657239545, '01m8ar62zs'],
];

test('an id is its prefix, the millisecond, then 16 random base32 characters', () => {
  for (const [ms, time] of TIMES) {
    const id = newId('inv', ms);
    assert.match(id, /^inv_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(id.slice(4, 14), time, String(ms));
    assert.ok(isId('inv', id));
    assert.ok(!isId('evt', id), 'another prefix');
  }
});

test('ids sort by the millisecond they were made in, and never repeat', () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => newId('evt', 1795657239545 + i * 3));
  assert.deepEqual([...ids].sort(), ids);
  const same = Array.from({ length: 10_000 }, () => newId('evt', 1795657239545));
  assert.equal(new Set(same).size, same.length);
  // 80 random bits: every character of the random part takes many values.
  for (let at = 14; at < 30; at++) assert.ok(new Set(same.map((id) => id[at])).size >= 30, `character ${at}`);
});
