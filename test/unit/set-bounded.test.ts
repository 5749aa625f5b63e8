import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setBounded } from '../../src/set-bounded.ts';

test('a full map drops its oldest entry for a new key', () => {
  const map = new Map([['a', 1], ['b', 2]]);
  setBounded(map, 'c', 3, 2);
  assert.deepEqual([...map], [['b', 2], ['c', 3]]);
});

test('a key already held is updated in place: nothing else is dropped', () => {
  const map = new Map([['a', 1], ['b', 2]]);
  setBounded(map, 'a', 10, 2);
  assert.deepEqual([...map], [['a', 10], ['b', 2]]);
});

test('below the bound nothing is dropped', () => {
  const map = new Map([['a', 1]]);
  setBounded(map, 'b', 2, 3);
  assert.deepEqual([...map.keys()], ['a', 'b']);
});
