import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { cacheDir, IN_BINARY, sqliteForThread } from '../../src/embedded.ts';

test('where the binary extracts its addons: TILL_CACHE_DIR, else the XDG cache, a relative XDG_CACHE_HOME ignored', () => {
  assert.equal(cacheDir({ TILL_CACHE_DIR: '/srv/till-cache', XDG_CACHE_HOME: '/x' }), '/srv/till-cache');
  assert.equal(cacheDir({ TILL_CACHE_DIR: 'cache' }), join(process.cwd(), 'cache'), 'a relative one is taken from where the command starts');
  assert.equal(cacheDir({ XDG_CACHE_HOME: '/x/cache' }), '/x/cache/till');
  assert.equal(cacheDir({ XDG_CACHE_HOME: 'relative', HOME: '/home/m' }), '/home/m/.cache/till');
  assert.equal(cacheDir({ HOME: '/home/m' }), '/home/m/.cache/till');
  assert.equal(cacheDir({}), `${homedir()}/.cache/till`, 'HOME unset: the passwd entry');
});

test('with an empty HOME and no TILL_CACHE_DIR there is no cache folder (not the working directory)', () => {
  assert.throws(() => cacheDir({ HOME: '' }), /HOME is not set/);
});

test('outside the binary the database thread requires better-sqlite3 from node_modules, with no binding of its own', () => {
  assert.equal(IN_BINARY, false);
  const thread = sqliteForThread();
  assert.match(thread.driver, /node_modules\/better-sqlite3\/lib\/index\.js$/);
  assert.equal(thread.nativeBinding, undefined);
});
