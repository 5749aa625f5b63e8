import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { test, type TestContext } from 'node:test';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { LATEST_SCHEMA_VERSION, migrate, SchemaTooNewError } from '../../../src/db/migrate.ts';
import { MIGRATIONS } from '../../../src/db/migrations/index.ts';
import { tempDir } from '../../helpers/temp.ts';

const require = createRequire(import.meta.url);

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

test('migration 0008: a payment replaced before it is watched from its first sighting, as it was; others have no replaced_at', (t) => {
  const db = new Database(join(tempDir(t), 'v7.db'));
  t.after(() => db.close());
  for (const m of MIGRATIONS.slice(0, 7)) db.exec(m.sql);
  db.pragma('user_version = 7');
  db.pragma('foreign_keys = OFF'); // payments alone: their invoices do not matter here
  const insert = db.prepare("INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at) VALUES (?, 0, 'inv_x', 1000, ?, ?)");
  insert.run('a'.repeat(64), 'replaced', 1_000);
  insert.run('b'.repeat(64), 'mempool', 2_000);
  migrate(db);
  assert.deepEqual(db.prepare('SELECT status, replaced_at FROM payments ORDER BY txid').all(), [
    { status: 'replaced', replaced_at: 1_000 },
    { status: 'mempool', replaced_at: null },
  ]);
});

test('migration 0011: payments recorded before it are ordinary ones (not coinbase); a coinbase flag is 0 or 1', (t) => {
  const db = new Database(join(tempDir(t), 'v10.db'));
  t.after(() => db.close());
  for (const m of MIGRATIONS.slice(0, 10)) db.exec(m.sql);
  db.pragma('user_version = 10');
  db.pragma('foreign_keys = OFF'); // payments alone: their invoices do not matter here
  db.prepare("INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at) VALUES (?, 0, 'inv_x', 1000, 'confirmed', 1000)").run('a'.repeat(64));
  migrate(db);
  assert.deepEqual(db.prepare('SELECT txid, coinbase FROM payments').all(), [{ txid: 'a'.repeat(64), coinbase: 0 }]);
  const insert = db.prepare("INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at, coinbase) VALUES (?, 0, 'inv_x', 1000, 'confirmed', 1000, ?)");
  insert.run('b'.repeat(64), 1);
  assert.throws(() => insert.run('c'.repeat(64), 2), /CHECK constraint failed/);
});

/** A database at schema 12 (the last with a unique address) holding a store, a key, two invoices (rowids 7 and 9), a payment and an event of each. */
function schema12WithInvoices(t: TestContext): Database.Database {
  const db = new Database(join(tempDir(t), 'v12.db'));
  t.after(() => db.close());
  for (const m of MIGRATIONS.slice(0, 12)) db.exec(m.sql);
  db.pragma('user_version = 12');
  db.exec(`
INSERT INTO stores (id, name, mode, created_at) VALUES ('sto_a', 'Shop', 'test', 1000);
INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, next_index, status, created_at) VALUES ('xpb_a', 'sto_a', 'test', 'tpub', 'p2wpkh', 'test', 2, 'active', 1000);
INSERT INTO invoices (rowid, id, store_id, livemode, status, amount_sats, xpub_id, address_index, address, script_hex, confirmations_required, late_window_ms, expires_at, created_at, metadata, callback_url, watch_until, wait_ended_at)
  VALUES (7, 'inv_a', 'sto_a', 0, 'paid', 1000, 'xpb_a', 0, 'bcrt1qa', '0014aa', 1, 60000, 5000, 2000, '{"order":"1"}', 'https://shop.example/cb', 9000, 4000),
         (9, 'inv_b', 'sto_a', 0, 'pending', 2500, 'xpb_a', 1, 'bcrt1qb', '0014bb', 0, 0, 6000, 3000, '{}', NULL, 9007199254740991, NULL);
INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at) VALUES ('${'a'.repeat(64)}', 0, 'inv_a', 1000, 'confirmed', 2500);
INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body) VALUES ('evt_a', 'invoice.paid', 'sto_a', 'inv_a', 0, 2500, '{}'), ('evt_b', 'invoice.created', 'sto_a', 'inv_b', 0, 3000, '{}');
`);
  return db;
}

test('migration 0013: every invoice keeps its row, rowid and links; the indexes are a new database\'s', (t) => {
  const db = schema12WithInvoices(t);
  const invoices = () => db.prepare('SELECT rowid, * FROM invoices ORDER BY rowid').all();
  const before = invoices();
  migrate(db);
  assert.equal(db.pragma('user_version', { simple: true }), LATEST_SCHEMA_VERSION);
  assert.deepEqual(invoices(), before);
  assert.equal((db.prepare("SELECT count(*) AS n FROM payments p JOIN invoices i ON i.id = p.invoice_id WHERE i.rowid = 7").get() as { n: number }).n, 1);
  assert.deepEqual(db.pragma('foreign_key_check'), []);
  assert.equal(db.pragma('foreign_keys', { simple: true }), 1, 'foreign keys are on again after the upgrade');
  assert.throws(() => db.prepare("INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at) VALUES (?, 0, 'inv_nowhere', 1, 'mempool', 1)").run('b'.repeat(64)), /FOREIGN KEY/);
  const fresh = new Database(':memory:');
  t.after(() => fresh.close());
  for (const m of MIGRATIONS) fresh.exec(m.sql);
  const indexesOf = (d: Database.Database) => d.prepare("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'invoices' ORDER BY name").all();
  assert.deepEqual(indexesOf(db), indexesOf(fresh));
});

test('migration 0014: every change to a key or a store, by any connection, moves the count the server\'s key cache looks at; nothing else does', (t) => {
  const db = schema12WithInvoices(t);
  migrate(db);
  const count = () => db.prepare("SELECT value FROM meta WHERE key = 'auth_changes'").pluck().get();
  assert.equal(count(), '0');
  db.exec("INSERT INTO api_keys (id, store_id, env, secret_hash, last4, created_at) VALUES ('key_a', 'sto_a', 'test', x'00', 'abcd', 1000)");
  db.exec("UPDATE api_keys SET revoked_at = 2000 WHERE id = 'key_a'");
  db.exec("UPDATE stores SET name = 'Renamed' WHERE id = 'sto_a'");
  db.exec("INSERT INTO stores (id, name, mode, created_at) VALUES ('sto_b', 'Other', 'live', 1000)");
  db.exec("DELETE FROM api_keys WHERE id = 'key_a'");
  db.exec("DELETE FROM stores WHERE id = 'sto_b'");
  assert.equal(count(), '6');
  db.exec("UPDATE invoices SET status = 'expired' WHERE id = 'inv_b'");
  db.exec("UPDATE xpubs SET next_index = 3 WHERE id = 'xpb_a'");
  assert.equal(count(), '6', 'invoices and xpubs are not counted');
});

test('migration 0015: every idempotency key keeps its answer, rows go in the order written, and a key is still taken once per API key', (t) => {
  const db = new Database(join(tempDir(t), 'v14.db'));
  t.after(() => db.close());
  for (const m of MIGRATIONS.slice(0, 14)) db.exec(m.sql);
  db.pragma('user_version = 14');
  const rows = [
    { api_key_id: 'key_b', key: 'retry-1', request_hash: 'h1', status: 201, body: '{"id":"inv_1"}', created_at: 2000 },
    { api_key_id: 'key_a', key: 'retry-1', request_hash: 'h2', status: 201, body: '{"id":"inv_2"}', created_at: 1000 },
  ];
  const insert = db.prepare('INSERT INTO idempotency_keys (api_key_id, key, request_hash, status, body, created_at) VALUES (@api_key_id, @key, @request_hash, @status, @body, @created_at)');
  for (const r of rows) insert.run(r);
  migrate(db);
  assert.deepEqual(db.prepare('SELECT * FROM idempotency_keys ORDER BY rowid').all(), [rows[1], rows[0]], 'oldest first, every column kept');
  assert.throws(() => insert.run(rows[0]), /UNIQUE constraint failed/);
  assert.match(String(db.prepare("SELECT sql FROM sqlite_master WHERE name = 'idempotency_keys'").pluck().get()), /\) STRICT$/, 'a rowid table');
});

test('an upgrade that would leave a row pointing at nothing is refused whole: the schema and rows stay as they were', (t) => {
  const db = schema12WithInvoices(t);
  // A link broken outside Till (foreign keys off in another program): found by the check before the upgrade commits.
  db.pragma('foreign_keys = OFF');
  db.prepare("INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, first_seen_at) VALUES (?, 0, 'inv_gone', 5, 'mempool', 1)").run('c'.repeat(64));
  db.pragma('foreign_keys = ON');
  const schema = () => db.prepare('SELECT name, sql FROM sqlite_master ORDER BY name').all();
  const before = schema();
  assert.throws(() => migrate(db), /after the upgrade 1 row\(s\) of payments would point at no invoices, so nothing was changed/);
  assert.equal(db.pragma('user_version', { simple: true }), 12);
  assert.deepEqual(schema(), before);
  assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
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

// The CLI may run while the server runs (DESIGN.md "Deployment shape"): after an
// upgrade, `till serve` and a `till ...` admin command both open the old
// database and both migrate it. The one that waited for the write lock must
// not apply again what the other applied (DROP INDEX of a dropped index).
test('two processes migrating the same old database at once: the second one does not fail, though the first holds the lock past its busy timeout', async (t) => {
  const dir = tempDir(t);
  const path = databasePath(dir);
  // A database left by a Till that knew migrations 1-3.
  const old = new Database(path);
  old.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.slice(0, 3)) {
    old.exec(m.sql);
    old.pragma(`user_version = ${m.version}`);
  }
  old.close();

  // "Another process" (a worker thread with its own connection) is migrating: it
  // holds the write lock while it applies migration 4, and commits 1 s later: longer than this process's busy
  // timeout (a large database's upgrade holds it for many seconds).
  const m4 = MIGRATIONS[3]!;
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.sqlite);
    const db = new Database(workerData.path, { timeout: 5000 });
    db.exec('BEGIN IMMEDIATE');
    db.exec(workerData.sql);
    db.pragma('user_version = ' + workerData.version);
    Atomics.store(workerData.shared, 0, 1);
    Atomics.notify(workerData.shared, 0);
    Atomics.wait(workerData.shared, 0, 1, 1000);
    db.exec('COMMIT');
    db.close();
    `,
    { eval: true, workerData: { path, sql: m4.sql, version: m4.version, shared, sqlite: require.resolve('better-sqlite3') } },
  );
  const exited = new Promise((resolve) => worker.on('exit', resolve));
  t.after(() => worker.terminate());
  Atomics.wait(shared, 0, 0, 5000);
  assert.equal(Atomics.load(shared, 0), 1, 'the worker holds the write lock');

  // This process opens the data dir meanwhile (as a CLI command would).
  let db: ReturnType<typeof openDatabase> | undefined;
  try {
    db = openDatabase(dir, { busyTimeoutMs: 250 });
    assert.equal(db.pragma('user_version', { simple: true }), LATEST_SCHEMA_VERSION);
  } finally {
    db?.close();
    await exited;
  }
});
