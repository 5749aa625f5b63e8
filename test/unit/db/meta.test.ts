import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { createMetaRepo } from '../../../src/db/meta.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { tempDir } from '../../helpers/temp.ts';

test('dataVersion moves when another connection commits, seen from the next synchronous run', async (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  migrate(db);
  t.after(() => db.close());
  const meta = createMetaRepo(db);
  const before = meta.dataVersion();

  meta.set('mine', '1');
  await setImmediate();
  assert.equal(meta.dataVersion(), before, 'commits of this connection do not move it');

  const other = new Database(databasePath(dir));
  other.prepare(`INSERT INTO meta (key, value) VALUES ('theirs', '1')`).run();
  other.close();
  // One read serves the whole run (a request's key cache and view cache both ask).
  assert.equal(meta.dataVersion(), before);
  await setImmediate();
  assert.notEqual(meta.dataVersion(), before, 'a commit of another connection shows at the next run');
});
