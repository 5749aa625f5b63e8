import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { findWalIndexHeader } from '../../../src/db/internal/wal-index-header.ts';
import { tempDir } from '../../helpers/temp.ts';

function shmDescriptors(dir: string): string[] {
  const shm = realpathSync(databasePath(dir)) + '-shm';
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === shm;
    } catch {
      return false;
    }
  });
}

test('the header changes with every commit, of this connection, another one, or another process', (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  t.after(() => db.close());
  const header = findWalIndexHeader(db);
  assert.ok(header, 'found through SQLite\'s descriptor of the -shm file');

  assert.equal(header.changed(), true, 'the first read has nothing to compare with');
  assert.equal(header.changed(), false, 'nothing committed');
  db.prepare(`INSERT INTO meta (key, value) VALUES ('mine', '1')`).run();
  assert.equal(header.changed(), true, 'a commit of this connection');
  assert.equal(header.changed(), false);
  db.prepare('SELECT count(*) FROM meta').get();
  assert.equal(header.changed(), false, 'a read is not a commit');

  const other = new Database(databasePath(dir));
  other.prepare(`INSERT INTO meta (key, value) VALUES ('theirs', '1')`).run();
  other.close();
  assert.equal(header.changed(), true, 'a commit of another connection');
  assert.equal(header.changed(), false);

  execFileSync(process.execPath, ['-e', `
    const db = new (require('better-sqlite3'))(process.argv[1]);
    db.prepare("INSERT INTO meta (key, value) VALUES ('process', '1')").run();
    db.close();`, databasePath(dir)]);
  assert.equal(header.changed(), true, 'a commit of another process');
  assert.equal(header.changed(), false);
});

test('the descriptor is SQLite\'s own: none is left open once the database closes', (t) => {
  // A descriptor of Till's own on the -shm file would be a hazard: closing it
  // would drop every POSIX lock this process holds on the file, SQLite's too.
  const dir = tempDir(t);
  const db = openDatabase(dir);
  const header = findWalIndexHeader(db);
  assert.ok(header);
  header.changed();
  assert.equal(shmDescriptors(dir).length, 1);
  db.close();
  assert.deepEqual(shmDescriptors(dir), []);
});

test('a database without a -shm file has no header to read', () => {
  const db = new Database(':memory:');
  try {
    assert.equal(findWalIndexHeader(db), null);
  } finally {
    db.close();
  }
});
