import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { LATEST_SCHEMA_VERSION, migrate, SchemaTooNewError } from '../../../src/db/migrate.ts';
import { MIGRATIONS } from '../../../src/db/migrations/index.ts';
import { tempDir } from '../../helpers/temp.ts';

test('every migration runs in order from an empty file', (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'empty.db'));
  t.after(() => db.close());
  for (const m of MIGRATIONS) {
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
    assert.equal(db.pragma('user_version', { simple: true }), m.version);
  }
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
  assert.deepEqual(db.pragma('foreign_key_check'), []);
});

test('openDatabase migrates a new data dir with WAL, FULL sync and foreign keys on', (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  t.after(() => db.close());
  assert.equal(db.pragma('user_version', { simple: true }), LATEST_SCHEMA_VERSION);
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  assert.equal(db.pragma('synchronous', { simple: true }), 2);
  assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all().map((r: any) => r.name);
  for (const name of ['stores', 'api_keys', 'xpubs', 'address_pool', 'invoices', 'payments', 'events', 'idempotency_keys', 'meta']) {
    assert.ok(tables.includes(name), `table ${name} exists`);
  }
});

test('migrating twice is a no-op', (t) => {
  const dir = tempDir(t);
  openDatabase(dir).close();
  const db = openDatabase(dir);
  t.after(() => db.close());
  assert.equal(migrate(db), LATEST_SCHEMA_VERSION);
});

test('a database from a newer Till is refused with a clear message and left untouched', (t) => {
  const dir = tempDir(t);
  const raw = new Database(databasePath(dir));
  raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
  raw.close();
  assert.throws(() => openDatabase(dir), (err: Error) => err instanceof SchemaTooNewError && /newer Till/.test(err.message));
  const after = new Database(databasePath(dir));
  assert.equal(after.pragma('user_version', { simple: true }), LATEST_SCHEMA_VERSION + 1);
  after.close();
});

test('a file that is not a database is refused, not overwritten', (t) => {
  const dir = tempDir(t);
  writeFileSync(databasePath(dir), 'this is not sqlite, it is somebody\'s notes'.repeat(100));
  assert.throws(() => openDatabase(dir), /not a database/);
});
