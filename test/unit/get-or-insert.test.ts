import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getOrInsert } from '../../src/get-or-insert.ts';

test('a missing key gets what make gives, stored for the next call', () => {
  const map = new Map<string, string[]>();
  const list = getOrInsert(map, 'a', () => []);
  list.push('x');
  assert.deepEqual(map.get('a'), ['x']);
  assert.equal(getOrInsert(map, 'a', () => assert.fail('made again')), list);
});

test('a stored value that is falsy is kept, not made again', () => {
  const map = new Map<string, number | undefined>([['zero', 0], ['none', undefined]]);
  assert.equal(getOrInsert(map, 'zero', () => 1), 0);
  assert.equal(getOrInsert(map, 'none', () => 1), undefined);
  assert.equal(map.size, 2);
});

test('a WeakMap keyed by an object works alike', () => {
  const map = new WeakMap<object, Set<number>>();
  const key = {};
  getOrInsert(map, key, () => new Set()).add(1);
  getOrInsert(map, key, () => new Set()).add(2);
  assert.deepEqual([...map.get(key)!], [1, 2]);
});
