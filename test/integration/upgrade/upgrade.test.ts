import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { SECRET_KEY_FILE } from '../../../src/auth/secret-box.ts';
import { ManualClock } from '../../../src/clock.ts';
import { loadConfig } from '../../../src/config.ts';
import { databasePath, openDatabase } from '../../../src/db/connection.ts';
import { WATCH_WHILE_NEEDED } from '../../../src/db/invoices.ts';
import { LATEST_SCHEMA_VERSION, UPGRADE_NOTICE } from '../../../src/db/migrate.ts';
import { MIGRATIONS } from '../../../src/db/migrations/index.ts';
import { createRuntime } from '../../../src/runtime.ts';
import { createContext, type Context } from '../../../src/services/context.ts';
import { addXpub, retireXpub } from '../../../src/services/xpubs.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { runTill } from '../../helpers/cli.ts';
import { tempDir, tempMount } from '../../helpers/temp.ts';
import { nodeEnv } from '../chain/helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeNode } from '../chain/nodes.ts';

// Data dirs left by older Tills, opened by this one. The fixtures are what the
// old code wrote: each was made by running that commit's own code (a git
// worktree of it: `till store create`, `xpub add`, `keys mint`, then `till
// serve` with invoices created over the API) and reading its rows back; the
// schema is that commit's migrations as they stood then.

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

function schemaOf(db: Database.Database): Array<{ type: string; name: string; sql: string | null }> {
  return db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all() as any;
}

// Migration 0003 as Till had it from 4766678 (the chain watcher) to d17239c:
// an invoice watched for as long as its state needs had watch_until NULL.
// dd61d9d changed 0003 in place to a NOT NULL sentinel, and the queries to
// `watch_until > ?`, but a database already at schema 3 never runs 0003 again.
const OLD_0003_NULL_WATCH = `
CREATE TABLE chain_blocks (
  height       INTEGER PRIMARY KEY,
  hash         TEXT NOT NULL UNIQUE,
  prev_hash    TEXT NOT NULL,
  processed_at INTEGER NOT NULL
) STRICT;

ALTER TABLE invoices ADD COLUMN watch_until INTEGER;
-- Covering: rebuilding the watch set at start reads this index only.
CREATE INDEX invoices_watch_until ON invoices(watch_until, script_hex);
CREATE INDEX payments_status ON payments(status) WHERE status = 'mempool';
CREATE INDEX payments_block_height ON payments(block_height) WHERE block_height IS NOT NULL;
`;

// A live store, its xpub and a pending invoice, exactly as Till at d17239c wrote
// them (`till store create --mode live`, `store set --expiry-minutes 5`,
// `xpub add`, then POST /v1/invoices to its `till serve`).
const CREATED_AT = 1795657239545;
const ADDRESS = 'mxxEgJW9A7omGBZMnPjac5BLxfZ5tDM7ZR';
const D17239C_ROWS = `
INSERT INTO stores (id, name, mode, confirmations_required, expiry_minutes, late_window_minutes, logo_url, brand_color, created_at, archived_at, callback_secret, callback_secret_previous, callback_secret_previous_expires_at) VALUES ('sto_01m8ar5xe11h1e1aa1pssfjdhg', 'Live Shop', 'live', 1, 5, 10080, NULL, NULL, 1795657233858, NULL, 'v1:mGlrTqcRg3WcYR1NRjQEi8YMwiXOhr5vH77qH3ccALq+d+1y9vvwjMFpNDWhYTEiOh9JcKGFuY7THwhFhFjOVsmRscb0YA7m7LKTMLQ=', NULL, NULL);
INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, gap_limit, next_index, last_funded_index, last_funded_at, status, created_at, retired_at) VALUES ('xpb_01m8ar5yt11v72h545ty7882rm', 'sto_01m8ar5xe11h1e1aa1pssfjdhg', 'live', 'tpubDCMq5BDBkbJSY6tMEjQkAntfP44frop1EYxFyEDMuhq617fs3B5MLcVyGxPqyPL6nfHBbJb5apVn3wLCpB2UbFUTKagz9zRFUzfuXashsHM', 'p2pkh', 'test', 20, 8, 5, 1795657239411, 'active', 1795657235265, NULL);
INSERT INTO invoices (id, store_id, livemode, status, amount_sats, fiat_amount_cents, currency, rate_cents_per_btc, rate_source, rate_fetched_at, xpub_id, address_index, address, script_hex, confirmations_required, late_window_ms, expires_at, created_at, paid_at, cancelled_at, expired_at, metadata, callback_url, version, watch_until) VALUES ('inv_01m8ar62zsa6vrqb4kv36keece', 'sto_01m8ar5xe11h1e1aa1pssfjdhg', 1, 'pending', 12345, NULL, NULL, NULL, NULL, NULL, 'xpb_01m8ar5yt11v72h545ty7882rm', 7, '${ADDRESS}', '76a914bf4236b570cc4782518253e2efed7fb6380c1ec888ac', 1, 604800000, 1795657539545, ${CREATED_AT}, NULL, NULL, NULL, '{"order":"L-9"}', NULL, 1, NULL);
`;

/** A data dir as Till d17239c left it (schema 3, D17239C_ROWS), with `rows` more. */
function d17239cDataDir(t: TestContext, rows = ''): string {
  const dir = tempDir(t);
  const old = new Database(databasePath(dir));
  old.pragma('journal_mode = WAL');
  old.exec(MIGRATIONS[0]!.sql);
  old.exec(MIGRATIONS[1]!.sql);
  old.exec(OLD_0003_NULL_WATCH);
  old.pragma('user_version = 3');
  old.exec(D17239C_ROWS + rows);
  old.close();
  // The old till's secret.key is not part of the fixture: a key of this test's own (the store's callback secret stays unreadable; a till only warns of it).
  writeFileSync(join(dir, SECRET_KEY_FILE), '11'.repeat(32) + '\n', { mode: 0o600 });
  return dir;
}

test('schema 3 with NULL watch_until (Till 4766678..d17239c): a pending invoice is still watched after the upgrade, and its payment found', async (t) => {
  const dir = d17239cDataDir(t);

  // A minute after the invoice was made, on the old till's clock; it expires 4 minutes later.
  const clock = new ManualClock(CREATED_AT + 60_000);
  const node = await startFakeNode(clock);
  t.after(() => node.stop());
  const { logger, lines } = capturedLogger();
  const rt = createRuntime(loadConfig({ env: { TILL_DATA_DIR: dir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', ...nodeEnv(node) } }), { clock, logger });
  t.after(() => rt.stop());
  // A large database's upgrade takes a while: the server says what it is doing.
  assert.deepEqual(lines.filter((l) => l.msg === UPGRADE_NOTICE).map((l) => [l.level, l.from, l.to]), [[30, 3, MIGRATIONS.length]]);
  rt.chain!.start();
  await rt.chain!.idle();
  await node.waitForSubscriber();

  await node.pay(ADDRESS, 12_345);
  const payments = () => (rt.ctx.db.prepare("SELECT count(*) AS n FROM payments WHERE invoice_id = 'inv_01m8ar62zsa6vrqb4kv36keece'").get() as { n: number }).n;
  await waitFor(() => payments() > 0, 'the buyer\'s payment recorded on the invoice made before the upgrade', 5_000);

  // The old column has no default: an invoice made after the upgrade is written watched all the same.
  const { rowid: _, ...made } = rt.ctx.repos.invoices.get('inv_01m8ar62zsa6vrqb4kv36keece')!;
  rt.ctx.repos.invoices.insert({ ...made, id: 'inv_01m8ar62zsa6vrqb4kv36keecf', addressIndex: 8, address: 'made-after-the-upgrade', scriptHex: '00'.repeat(22), payments: [] });
  const watchUntil = rt.ctx.db.prepare("SELECT watch_until FROM invoices WHERE id = 'inv_01m8ar62zsa6vrqb4kv36keecf'").pluck().get();
  assert.equal(watchUntil, WATCH_WHILE_NEEDED);
});

// Before 3402cca (25 November) one key pasted in two forms became two rows, each
// counting its indexes from 0. Rows such a Till could have written beside
// D17239C_ROWS' key (a bare tpub, p2pkh): the same key with its origin, added
// earlier to the same store and retired after handing out indexes 0-2, and as a
// descriptor to a second store, active and never used (its first invoice failed
// on the unique address then).
const KEY = 'tpubDCMq5BDBkbJSY6tMEjQkAntfP44frop1EYxFyEDMuhq617fs3B5MLcVyGxPqyPL6nfHBbJb5apVn3wLCpB2UbFUTKagz9zRFUzfuXashsHM';
const TWIN_ROWS = `
INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, gap_limit, next_index, status, created_at, retired_at) VALUES ('xpb_01m8ar5ws0000000000000000a', 'sto_01m8ar5xe11h1e1aa1pssfjdhg', 'live', 'pkh([d34db33f/44h/1h/0h]${KEY}/0/*)', 'p2pkh', 'test', 20, 3, 'retired', 1795657234000, 1795657235265);
`;
const TWIN_IN_SECOND_STORE_ROWS = `
INSERT INTO stores (id, name, mode, created_at) VALUES ('sto_01m8ar70000000000000000000', 'Second Shop', 'test', 1795657300000);
INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, gap_limit, next_index, status, created_at) VALUES ('xpb_01m8ar7000000000000000000b', 'sto_01m8ar70000000000000000000', 'test', 'pkh(${KEY})', 'p2pkh', 'test', 20, 0, 'active', 1795657300000);
`;
const FIRST = 'xpb_01m8ar5ws0000000000000000a';
const ORIGINAL = 'xpb_01m8ar5yt11v72h545ty7882rm';
const SECOND_STORE = 'xpb_01m8ar7000000000000000000b';

const keyState = (ctx: Context) => Object.fromEntries(ctx.repos.xpubs.list().map((x) => [x.id, `${x.status} ${x.nextIndex}`]));

test('one key added in two forms by a Till before 3402cca: the server\'s start leaves one row active, past every index any of them handed out', (t) => {
  const dir = d17239cDataDir(t, TWIN_ROWS + TWIN_IN_SECOND_STORE_ROWS);
  const { logger, lines } = capturedLogger();
  const rt = createRuntime(loadConfig({ env: { TILL_DATA_DIR: dir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', TILL_BITCOIND: 'false' } }), { clock: new ManualClock(CREATED_AT + 60_000), logger });
  t.after(() => rt.stop());
  // The original store keeps its key; the second store's copy would have handed out the original's addresses 0-7.
  assert.deepEqual(keyState(rt.ctx), { [FIRST]: 'retired 3', [ORIGINAL]: 'active 8', [SECOND_STORE]: 'retired 0' });
  const warned = lines.filter((l) => l.level === 40 && /are one key/.test(String(l.msg)));
  assert.deepEqual(warned.map((l) => [l.xpubs, l.kept, l.retired, l.next_index]), [[[FIRST, ORIGINAL, SECOND_STORE], ORIGINAL, [SECOND_STORE], 8]]);
  assert.match(String(warned[0]!.msg), new RegExp(`${ORIGINAL} goes on from index 8, past every address any of them handed out, and ${SECOND_STORE} is retired`));
  assert.equal(rt.ctx.repos.xpubs.findActive('sto_01m8ar70000000000000000000', 'test'), null, 'the second store asks for a key of its own (409 no_active_xpub)');

  // A second start finds nothing more to repair, even once the key moved on.
  rt.ctx.repos.xpubs.skipIndexes(ORIGINAL, 1);
  rt.ctx.db.close();
  const { logger: logger2, lines: lines2 } = capturedLogger();
  const again = createRuntime(loadConfig({ env: { TILL_DATA_DIR: dir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', TILL_BITCOIND: 'false' } }), { clock: new ManualClock(CREATED_AT + 120_000), logger: logger2 });
  t.after(() => again.stop());
  assert.deepEqual(lines2.filter((l) => /are one key/.test(String(l.msg))), []);
});

test('one key added in two forms by a Till before 3402cca: added again by the CLI before any server start, it goes on after both rows\' indexes', (t) => {
  const dir = d17239cDataDir(t, TWIN_ROWS);
  const config = loadConfig({ env: { TILL_DATA_DIR: dir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000' } });
  const db = openDatabase(dir);
  t.after(() => db.close());
  const ctx = createContext(db, new ManualClock(CREATED_AT + 60_000), config);
  retireXpub(ctx, ORIGINAL);
  // The oldest row of the key comes back (it handed out 0-2); the original handed out 0-7.
  const { xpub } = addXpub(ctx, { storeId: 'sto_01m8ar5xe11h1e1aa1pssfjdhg', env: 'live', key: KEY });
  assert.equal(xpub.id, FIRST);
  assert.equal(xpub.nextIndex, 8);
});

// Migration 0007 as Till had it from 519a00f to 02c8492: the table was named mempool_spends.
const OLD_0007_MEMPOOL_SPENDS = `
CREATE TABLE mempool_spends (
  outpoint TEXT NOT NULL,
  txid     TEXT NOT NULL,
  PRIMARY KEY (outpoint, txid)
) STRICT, WITHOUT ROWID;
`;

test('a data dir of another network is refused before its upgrade: the file stays at its old schema, for its own network', async (t) => {
  const dir = d17239cDataDir(t, "INSERT INTO meta (key, value) VALUES ('network', 'regtest');");
  const version = () => {
    const db = new Database(databasePath(dir), { readonly: true });
    t.after(() => db.close());
    return db.pragma('user_version', { simple: true });
  };
  const signet = loadConfig({ env: { TILL_DATA_DIR: dir, TILL_NETWORK: 'signet', TILL_RATES: 'fixed:65000' } });
  assert.throws(() => createRuntime(signet, { logger: capturedLogger().logger }), /holds a till for network "regtest"/);
  const cli = await runTill(['invoices', 'find', '--store', 'sto_01m8ar5xe11h1e1aa1pssfjdhg'], { dataDir: dir, env: { TILL_NETWORK: 'signet' } });
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /holds a till for network "regtest" .*configured for "signet"/);
  assert.doesNotMatch(cli.stderr, /upgrad/i, 'no upgrade announced');
  assert.equal(version(), 3, 'not upgraded');

  const found = await runTill(['invoices', 'find', '--store', 'sto_01m8ar5xe11h1e1aa1pssfjdhg'], { dataDir: dir, env: { TILL_NETWORK: 'regtest' } });
  assert.equal(found.code, 0, found.stderr);
  assert.match(found.stdout, /inv_01m8ar62zsa6vrqb4kv36keece/);
  assert.equal(version(), MIGRATIONS.length, 'its own network upgrades it');
});

/**
 * The d17239c data dir with 30,000 more invoices (migration 0013 rewrites them all), on a tmpfs of its own left
 * with `freeFactor` times the database's size free; null where no tmpfs can be mounted.
 */
function dataDirOnFullDisk(t: TestContext, freeFactor: number) {
  const mount = tempMount(t, 96);
  if (!mount) return null;
  const many = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
    INSERT INTO invoices (id, store_id, livemode, status, amount_sats, xpub_id, address_index, address, script_hex, confirmations_required, late_window_ms, expires_at, created_at, metadata, version)
    SELECT printf('inv_01m8ar6%019d', i), 'sto_01m8ar5xe11h1e1aa1pssfjdhg', 1, 'expired', 1000, 'xpb_01m8ar5yt11v72h545ty7882rm', 100 + i, 'address-' || i, printf('%044d', i), 1, 604800000, ${CREATED_AT}, ${CREATED_AT}, '{}', 1 FROM n;`;
  const dir = join(mount, 'data');
  cpSync(d17239cDataDir(t, many), dir, { recursive: true });
  const free = () => statfsSync(mount).bavail * statfsSync(mount).bsize;
  writeFileSync(join(mount, 'filler'), Buffer.alloc(Math.max(0, free() - Math.floor(statSync(databasePath(dir)).size * freeFactor))));
  // Closed at once: the mount is unmounted when the test ends.
  const read = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(databasePath(dir), { readonly: true });
    try {
      return fn(db);
    } finally {
      db.close();
    }
  };
  return {
    dir,
    version: () => read((db) => db.pragma('user_version', { simple: true })),
    invoices: () => read((db) => db.prepare('SELECT count(*) FROM invoices').pluck().get()),
    makeRoom: () => rmSync(join(mount, 'filler')),
    find: () => runTill(['invoices', 'find', '--store', 'sto_01m8ar5xe11h1e1aa1pssfjdhg', '--limit', '1'], { dataDir: dir, env: { TILL_NETWORK: 'regtest' } }),
  };
}

test('an upgrade on a disk too full for it: refused whole, saying how much room it needs; it runs once there is room', async (t) => {
  const data = dataDirOnFullDisk(t, 1 / 3);
  if (!data) return t.skip('cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)');
  const refused = await data.find();
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`\\ntill: the disk holding ${databasePath(data.dir)} is full: upgrading the database from schema 3 to ${MIGRATIONS.length} rewrites tables and needs free space of up to about twice the database's size \\(\\d+ MiB now\\); nothing was changed\\. Free some space`));
  assert.equal(data.version(), 3, 'nothing changed');

  data.makeRoom();
  const found = await data.find();
  assert.equal(found.code, 0, found.stderr);
  assert.equal(data.version(), MIGRATIONS.length);
  assert.equal(data.invoices(), 30_001, 'every invoice kept');
});

test('an upgrade that fits on the disk but leaves no room to copy it into the database file: said as such, then done', async (t) => {
  const data = dataDirOnFullDisk(t, 1.2);
  if (!data) return t.skip('cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)');
  const refused = await data.find();
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`\\ntill: the database in ${databasePath(data.dir)} was upgraded to schema ${MIGRATIONS.length}, but that left the disk holding it full \\(\\d+ MiB now, and the upgrade in its WAL beside it\\): free some space`));
  assert.equal(data.version(), MIGRATIONS.length);

  data.makeRoom();
  const found = await data.find();
  assert.equal(found.code, 0, found.stderr);
  assert.equal(data.invoices(), 30_001, 'every invoice kept');
});

test('a new database on a disk too full for it: said as such (not as an upgrade), however little room is left', async (t) => {
  // With 32 KiB or less SQLite fails making its -shm file ("disk I/O error"): that was an "unexpected error".
  for (const freeKiB of [96, 32, 8, 0]) {
    const mount = tempMount(t, 2);
    if (!mount) return t.skip('cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)');
    const fs = statfsSync(mount);
    writeFileSync(join(mount, 'filler'), Buffer.alloc(fs.bavail * fs.bsize - freeKiB * 1024));
    const dataDir = join(mount, 'data');
    const r = await runTill(['store', 'create', '--name', 'Shop', '--mode', 'test'], { dataDir, env: { TILL_NETWORK: 'regtest' } });
    assert.equal(r.code, 1, `${freeKiB} KiB free`);
    assert.equal(r.stderr, `till: the disk holding ${databasePath(dataDir)} is full: there is no room for a new database. Free some space (or choose another data directory) and start again\n`, `${freeKiB} KiB free`);
  }
});

test('a database on a disk since filled up: opening it says the disk is full, and it is left as it was', async (t) => {
  const mount = tempMount(t, 2);
  if (!mount) return t.skip('cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)');
  const dataDir = join(mount, 'data');
  const env = { TILL_NETWORK: 'regtest' };
  assert.equal((await runTill(['store', 'create', '--name', 'Shop', '--mode', 'test'], { dataDir, env })).code, 0);
  const fs = statfsSync(mount);
  writeFileSync(join(mount, 'filler'), Buffer.alloc(fs.bavail * fs.bsize));
  const r = await runTill(['store', 'list'], { dataDir, env });
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `till: the disk holding ${databasePath(dataDir)} is full: SQLite has no room for its WAL and shared-memory files beside the database (nothing was changed). Free some space (or move the data directory) and start again\n`);
  rmSync(join(mount, 'filler'));
  const listed = await runTill(['store', 'list'], { dataDir, env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /Shop/);
});

test('schema 7 with mempool_spends (Till 519a00f..02c8492): the upgrade gives it payment_spends, in its place', (t) => {
  const dir = tempDir(t);
  const old = new Database(databasePath(dir));
  old.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.slice(0, 6)) old.exec(m.sql);
  old.exec(OLD_0007_MEMPOOL_SPENDS);
  old.pragma('user_version = 7');
  old.close();

  const db = openDatabase(dir);
  t.after(() => db.close());
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%_spends'").pluck().all();
  assert.deepEqual(tables, ['payment_spends']);
  db.prepare("INSERT INTO payment_spends (outpoint, txid) VALUES (?, ?)").run(`${'a'.repeat(64)}:0`, 'b'.repeat(64));
  assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
});

// Migration 0005's statement: a process killed while it runs has applied 0004.
const KILL_AT = MIGRATIONS[4]!.sql.trim();

test('an upgrade killed part-way (kill -9 during a migration) leaves the old schema the old version opens, and a later start finishes it', async (t) => {
  const dir = tempDir(t);
  // A data dir at schema 3, as Till ae8833b (the last with schema 3) left it.
  const old = new Database(databasePath(dir));
  old.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.slice(0, 3)) {
    old.exec(m.sql);
    old.pragma(`user_version = ${m.version}`);
  }
  old.exec("INSERT INTO stores (id, name, mode, created_at) VALUES ('sto_01m830e07jz0362g5mrsf13073', 'Test Shop', 'test', 1795397452000)");
  const before = schemaOf(old);
  old.close();

  // The upgrading process dies (SIGKILL, no chance to clean up) as it starts migration 0005.
  const preload = join(dir, 'kill-during-migration.mjs');
  writeFileSync(
    preload,
    `import { createRequire } from 'node:module';
const Database = createRequire(${JSON.stringify(join(REPO, 'package.json'))})('better-sqlite3');
const exec = Database.prototype.exec;
Database.prototype.exec = function (sql) {
  if (sql.trim() === process.env.KILL_AT) process.kill(process.pid, 'SIGKILL');
  return exec.call(this, sql);
};
`,
  );
  const child = spawn(
    process.execPath,
    ['--import', preload, '--input-type=module', '-e', `const { openDatabase } = await import(${JSON.stringify(join(REPO, 'src/db/connection.ts'))}); openDatabase(${JSON.stringify(dir)});`],
    { env: { ...process.env, KILL_AT }, stdio: 'inherit' },
  );
  const signal = await new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig)));
  assert.equal(signal, 'SIGKILL', 'the upgrade was killed during a migration');

  const after = new Database(databasePath(dir), { readonly: true });
  try {
    assert.equal(after.pragma('integrity_check', { simple: true }), 'ok');
    // Till at schema 3 refuses anything newer ("written by a newer Till"): the
    // merchant could not go back to the version that wrote this data.
    assert.equal(after.pragma('user_version', { simple: true }), 3, 'the schema is the old version\'s, not half-upgraded');
    assert.deepEqual(schemaOf(after), before);
  } finally {
    after.close();
  }

  const db = openDatabase(dir);
  t.after(() => db.close());
  assert.equal(db.pragma('user_version', { simple: true }), LATEST_SCHEMA_VERSION);
  assert.equal((db.prepare('SELECT count(*) AS n FROM stores').get() as { n: number }).n, 1);
});
