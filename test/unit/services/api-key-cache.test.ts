// The server caches each API key with its store. Another connection's commit
// (the db thread's webhook outcomes, many a second) must not empty that cache
// unless it changed a key or a store; one that did must apply at once.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { authenticateApiKey } from '../../../src/services/api-keys.ts';
import { startTestTill, setupStore } from '../../helpers/till-server.ts';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

test('other connections\' commits: the API key cache stays through those that change no key or store, and a revocation or an archive applies at once', async (t) => {
  const till = await startTestTill(t);
  const { ctx } = till.rt;
  const first = setupStore(till);
  const second = setupStore(till, { label: 'second' });
  const other = new Database(join(till.config.dataDir, 'till.db'), { timeout: 5000 });
  t.after(() => other.close());
  let lookups = 0;
  const findByHash = ctx.repos.apiKeys.findByHash;
  ctx.repos.apiKeys.findByHash = (hash) => {
    lookups++;
    return findByHash(hash);
  };
  const auth = (key: string) => authenticateApiKey(ctx, `Bearer ${key}`);

  auth(first.key);
  auth(second.key);
  assert.equal(lookups, 2);
  // A commit of another connection that touches no key or store, as the db thread's are.
  other.prepare("INSERT INTO meta (key, value) VALUES ('unrelated', 'x')").run();
  await nextTurn();
  auth(first.key);
  auth(second.key);
  assert.equal(lookups, 2, 'both keys still cached');

  other.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(Date.now(), first.keyId);
  await nextTurn();
  assert.throws(() => auth(first.key), { code: 'api_key_revoked' });
  other.prepare('UPDATE stores SET archived_at = ? WHERE id = ?').run(Date.now(), second.storeId);
  await nextTurn();
  assert.throws(() => auth(second.key), { code: 'not_found' });
});

test('with the count\'s row deleted by hand, any other connection\'s commit empties the API key cache, as before the count', async (t) => {
  const till = await startTestTill(t);
  const { ctx } = till.rt;
  const store = setupStore(till);
  const other = new Database(join(till.config.dataDir, 'till.db'), { timeout: 5000 });
  t.after(() => other.close());
  other.prepare("DELETE FROM meta WHERE key = 'auth_changes'").run();
  await nextTurn();
  authenticateApiKey(ctx, `Bearer ${store.key}`);
  // The count's row gone, the triggers count nothing: a revocation must still apply.
  other.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(Date.now(), store.keyId);
  await nextTurn();
  assert.throws(() => authenticateApiKey(ctx, `Bearer ${store.key}`), { code: 'api_key_revoked' });
});
