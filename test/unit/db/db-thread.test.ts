import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { ManualClock } from '../../../src/clock.ts';
import { CHECKPOINT_REPORT_MS, startDbThread, WRITER_CHECKPOINT_PAGES } from '../../../src/db/db-thread.ts';
import { createWriteQueue } from '../../../src/db/write-queue.ts';
import { tempDir } from '../../helpers/temp.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';

// What a checkpoint is for: committed pages reach the database file itself,
// so the WAL can be reused. Copying till.db alone (no -wal) shows what the
// file holds; the writer here never checkpoints itself (its bound is far off).

const ROWS = 2_000;

function setup(t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'c.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY, pad BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO t (v, pad) VALUES (?, randomblob(1000))');
  const write = db.transaction((from: number) => {
    for (let v = from; v < from + 100; v++) insert.run(v);
  });
  /** Rows the database file holds without its WAL; -1 if the copy caught a checkpoint half-way. */
  const rowsInFile = () => {
    const copy = join(dir, `copy-${Math.random()}.db`);
    copyFileSync(join(dir, 'c.db'), copy);
    const c = new Database(copy, { readonly: true });
    try {
      return (c.prepare("SELECT COUNT(*) AS n FROM sqlite_schema WHERE name = 't'").get() as { n: number }).n === 0
        ? 0
        : (c.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n;
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CORRUPT') return -1;
      throw err;
    } finally {
      c.close();
    }
  };
  return { db, dir, rowsInFile, writeAll: () => { for (let i = 0; i < ROWS; i += 100) write(i); } };
}

async function waitFor(check: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(20);
  }
  return check();
}

test('committed pages reach the database file from the db thread', async (t) => {
  const { db, rowsInFile, writeAll } = setup(t);
  const errors: Error[] = [];
  const thread = startDbThread(db, { intervalMs: 20, busyTimeoutMs: 1000, onError: (e) => errors.push(e) });
  t.after(() => thread.stop().then(() => db.close()));
  assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), WRITER_CHECKPOINT_PAGES, 'the writer only checkpoints past its safety bound');
  writeAll();
  assert.ok(await waitFor(() => rowsInFile() === ROWS), `the file holds ${rowsInFile()} of ${ROWS} rows`);
  assert.deepEqual(errors, []);
});

test('without it, the same commits stay in the WAL (the writer is not checkpointing)', async (t) => {
  const { db, rowsInFile, writeAll } = setup(t);
  t.after(() => db.close());
  db.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
  writeAll();
  await sleep(200);
  assert.equal(rowsInFile(), 0);
});

test('under steady group commits the WAL starts over once it is long, instead of growing to the writer\'s bound', async (t) => {
  const { db, dir } = setup(t);
  const restartPages = 32;
  const thread = startDbThread(db, { intervalMs: 5, restartPages, busyTimeoutMs: 1000, onError: (e) => assert.fail(e) });
  t.after(() => thread.stop().then(() => db.close()));
  const queue = createWriteQueue(db);
  queue.useThread(thread);
  await thread.commit([]); // the thread is up
  const insert = db.prepare('INSERT INTO t (v, pad) VALUES (?, randomblob(1000))');
  // 16 writers, each waiting for its last write and a moment: a group commit every millisecond or so, as under load.
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = 0; i < 400; i++) {
      await queue.run(() => insert.run(w * 1000 + i));
      await sleep(1);
    }
  }));
  assert.equal((db.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n, 6_400);
  // The WAL file never shrinks: its length is the most pages it ever held
  // (~250 here; ~2,000 without the pauses, where it starts over only by chance).
  const pages = statSync(join(dir, 'c.db-wal')).size / (4096 + 24);
  assert.ok(pages < 1_000, `the WAL reached ${Math.round(pages)} pages`);
});

test('a restart pause ends when the thread has copied the WAL, and at once when the thread has stopped', async (t) => {
  const { db, rowsInFile, writeAll } = setup(t);
  const thread = startDbThread(db, { intervalMs: 60_000, busyTimeoutMs: 1000, onError: (e) => assert.fail(e) });
  t.after(() => db.close());
  assert.equal(thread.wantsWalRestart, false, 'a short WAL asks for nothing');
  writeAll();
  await thread.restartWal();
  assert.equal(rowsInFile(), ROWS, 'every frame was copied (the timer\'s first checkpoint is a minute off)');
  const asked = thread.restartWal();
  assert.equal(thread.restartWal(), asked, 'asked again while under way: the same pause');
  await thread.stop();
  await asked;
  await thread.restartWal();
});

test('stop ends the thread; the database then closes as usual and removes its WAL', async (t) => {
  const { db, dir, writeAll } = setup(t);
  const thread = startDbThread(db, { intervalMs: 20, busyTimeoutMs: 1000, onError: (e) => assert.fail(e) });
  writeAll();
  await thread.stop();
  await thread.stop();
  db.close();
  assert.equal(existsSync(join(dir, 'c.db-wal')), false);
});

test('a failing checkpoint is reported once, again a period later with its count, and its recovery once', async (t) => {
  const { db, dir, writeAll } = setup(t);
  const clock = new ManualClock(0);
  const reports: string[] = [];
  const thread = startDbThread(db, { intervalMs: 10, busyTimeoutMs: 1000, now: () => clock.now(), onError: (e) => reports.push(e.message), onRecovered: () => reports.push('recovered') });
  t.after(() => thread.stop().then(() => db.close()));
  await thread.commit([]); // the thread is up, its connection open
  // A real I/O failure: a reader pins the snapshot before the writes, so their
  // frames stay in the WAL; the WAL is then cut short under SQLite's feet.
  const pin = new Database(join(dir, 'c.db'));
  pin.prepare('BEGIN').run();
  pin.prepare('SELECT COUNT(*) FROM t').get();
  writeAll();
  const wal = join(dir, 'c.db-wal');
  const intact = readFileSync(wal);
  truncateSync(wal, 32);
  pin.prepare('COMMIT').run();
  pin.close();
  assert.ok(await waitFor(() => reports.length > 0), 'the failure is reported');
  await sleep(200);
  assert.deepEqual(reports, ['WAL checkpoint failed: disk I/O error'], 'once, though retried every 10 ms');
  clock.advance(CHECKPOINT_REPORT_MS);
  assert.ok(await waitFor(() => reports.length > 1), 'reported again a period later');
  assert.match(reports[1]!, /^WAL checkpoint failed: disk I\/O error \(\d+ more times since it was last reported\)$/);
  assert.ok(Number(/\((\d+) more/.exec(reports[1]!)![1]) >= 5, reports[1]);
  writeFileSync(wal, intact);
  assert.ok(await waitFor(() => reports.at(-1) === 'recovered'), `recovery reported: ${reports.join(' | ')}`);
  assert.equal(reports.length, 3);
});

// The thread's second job: committing batches of plain statements for the write queue.

function statementsSetup(t: Parameters<typeof tempDir>[0], busyTimeoutMs = 1000) {
  const dir = tempDir(t);
  const db = new Database(join(dir, 's.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY, note TEXT)');
  const thread = startDbThread(db, { busyTimeoutMs, onError: (e) => assert.fail(e) });
  t.after(() => thread.stop().then(() => db.close()));
  const insert = (v: number) => ({ sql: 'INSERT INTO t (v) VALUES (@v)', params: { v } });
  const values = () => db.prepare('SELECT v FROM t ORDER BY v').pluck().all();
  return { db, dir, thread, insert, values };
}

test('the thread commits jobs of statements together; each job gets its statements\' changes', async (t) => {
  const { thread, insert, values } = statementsSetup(t);
  const outcomes = await thread.commit([
    [insert(1), insert(2)],
    [{ sql: "UPDATE t SET note = 'x' WHERE v <= @max", params: { max: 5 } }],
  ]);
  assert.deepEqual(outcomes, [{ ok: true, value: [1, 1] }, { ok: true, value: [2] }]);
  assert.deepEqual(values(), [1, 2]);
});

test('a failing job rolls back alone, with its SQLite code; the rest of the batch commits', async (t) => {
  const { thread, insert, values } = statementsSetup(t);
  const outcomes = await thread.commit([[insert(1)], [insert(2), insert(1)], [insert(3)]]);
  assert.deepEqual(outcomes.map((o) => o.ok), [true, false, true]);
  const failed = outcomes[1] as { ok: false; error: Error & { code?: string } };
  assert.equal(failed.error.code, 'SQLITE_CONSTRAINT_PRIMARYKEY');
  assert.deepEqual(values(), [1, 3], 'the failed job left nothing behind, not even its first statement');
});

test("while another process holds the write lock, the thread waits for it and the event loop keeps turning", async (t) => {
  const { db, dir, thread, insert, values } = statementsSetup(t);
  const lock = holdWriteLock(t, join(dir, 's.db'));
  const committed = thread.commit([[insert(7)]]);
  await lock.assertLoopTurnsFor(150);
  assert.deepEqual(values(), []);
  lock.release();
  assert.deepEqual(await committed, [{ ok: true, value: [1] }]);
  assert.deepEqual(values(), [7]);
  assert.ok(db.open);
});

test('a lock held past the busy timeout fails the whole batch with SQLITE_BUSY; nothing is written', async (t) => {
  const { dir, thread, insert, values } = statementsSetup(t, 50);
  const other = new Database(join(dir, 's.db'));
  t.after(() => other.close());
  other.exec('BEGIN IMMEDIATE');
  await assert.rejects(thread.commit([[insert(1)], [insert(2)]]), (err: Error & { code?: string }) => err.code === 'SQLITE_BUSY');
  other.exec('ROLLBACK');
  assert.deepEqual(values(), []);
});

test('once stopped, the thread takes no batch', async (t) => {
  const { thread, insert } = statementsSetup(t);
  await thread.stop();
  assert.equal(thread.running, false);
  await assert.rejects(thread.commit([[insert(1)]]), /stopped/);
});
