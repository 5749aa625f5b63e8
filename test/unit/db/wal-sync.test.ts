import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { openWalSync } from '../../../src/db/wal-sync.ts';
import { tempDir } from '../../helpers/temp.ts';

function descriptorsOf(path: string): string[] {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  });
}

test('syncs the WAL file through a descriptor of its own, closed by close()', async (t) => {
  const db = new Database(join(tempDir(t), 's.db'));
  t.after(() => db.close());
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  const wal = realpathSync(db.name) + '-wal';
  const sqlites = descriptorsOf(wal).length;
  const sync = openWalSync(db)!;
  db.exec('INSERT INTO t VALUES (1)');
  await new Promise<void>((resolve, reject) => sync.sync((err) => (err ? reject(err) : resolve())));
  assert.equal(descriptorsOf(wal).length, sqlites + 1, 'one descriptor of the -wal file more than SQLite\'s');
  sync.close();
  assert.equal(descriptorsOf(wal).length, sqlites);
  assert.equal(db.prepare('SELECT COUNT(*) FROM t').pluck().get(), 1, 'SQLite is unaffected');
});

test('no WalSync for a database without a WAL file', (t) => {
  const memory = new Database(':memory:');
  t.after(() => memory.close());
  assert.equal(openWalSync(memory), null);
  const rollback = new Database(join(tempDir(t), 'r.db'));
  t.after(() => rollback.close());
  assert.equal(openWalSync(rollback), null, 'rollback journal: SQLite syncs its own commits');
});
