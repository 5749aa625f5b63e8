import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { startDbThread } from '../../../src/db/db-thread.ts';
import { createWriteQueue } from '../../../src/db/write-queue.ts';
import type { WalSync } from '../../../src/db/wal-sync.ts';
import { join } from 'node:path';
import { heldSync } from '../../helpers/held-sync.ts';
import { tempDir } from '../../helpers/temp.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';

function setup(t: Parameters<typeof tempDir>[0]) {
  const db = new Database(join(tempDir(t), 'q.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
  t.after(() => db.close());
  return { db, queue: createWriteQueue(db), rows: () => db.prepare('SELECT v FROM t ORDER BY v').all().map((r: any) => r.v) };
}

test('writes queued together commit together, each resolving with its result', async (t) => {
  const { db, queue, rows } = setup(t);
  let transactions = 0;
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const results = await Promise.all([1, 2, 3].map((v) => queue.run(() => {
    transactions += db.inTransaction ? 1 : 0;
    return insert.run(v).changes;
  })));
  assert.deepEqual(results, [1, 1, 1]);
  assert.equal(transactions, 3, 'every write ran inside the batch transaction');
  assert.deepEqual(rows(), [1, 2, 3]);
});

test('a failing write rolls back alone; the others in its batch are committed', async (t) => {
  const { db, queue, rows } = setup(t);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const outcomes = await Promise.allSettled([
    queue.run(() => insert.run(1)),
    queue.run(() => {
      insert.run(2);
      throw new Error('refused after writing');
    }),
    queue.run(() => insert.run(3)),
  ]);
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'rejected', 'fulfilled']);
  assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /refused after writing/);
  assert.deepEqual(rows(), [1, 3], 'the failed write left nothing behind');
});

test('a write that makes SQLite end the transaction (the database full) fails its whole batch with its error; nothing of the batch is written', async (t) => {
  // From a review: the writes after it committed one by one outside the batch, which was then refused.
  const { db, queue, rows } = setup(t);
  db.exec('ALTER TABLE t ADD COLUMN b BLOB');
  db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 20}`);
  const insert = db.prepare('INSERT INTO t VALUES (?, ?)');
  const outcomes = await Promise.allSettled([
    queue.run(() => insert.run(1, Buffer.alloc(10))),
    queue.run(() => insert.run(2, Buffer.alloc(200_000))),
    queue.run(() => insert.run(3, Buffer.alloc(10))),
  ]);
  assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected', 'rejected']);
  for (const o of outcomes) assert.equal(((o as PromiseRejectedResult).reason as { code?: string }).code, 'SQLITE_FULL');
  assert.deepEqual(rows(), []);
  assert.equal(db.inTransaction, false);
  // Room again: the queue writes as before.
  assert.equal((await queue.run(() => insert.run(4, Buffer.alloc(10)))).changes, 1);
  assert.deepEqual(rows(), [4]);
});

test('a single failing write rejects with its own error', async (t) => {
  const { queue, rows } = setup(t);
  await assert.rejects(queue.run(() => { throw new RangeError('nope'); }), RangeError);
  assert.deepEqual(rows(), []);
});

test('when the commit cannot happen, every write of the batch is rejected and nothing is written', async (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'q.db'), { timeout: 50 });
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 50');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
  const other = new Database(join(dir, 'q.db'));
  t.after(() => (other.close(), db.close()));
  other.exec('BEGIN IMMEDIATE');
  const queue = createWriteQueue(db);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const outcomes = await Promise.allSettled([queue.run(() => insert.run(1)), queue.run(() => insert.run(2))]);
  assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected']);
  assert.match(String((outcomes[0] as PromiseRejectedResult).reason?.code), /SQLITE_BUSY/);
  other.exec('ROLLBACK');
  assert.deepEqual(db.prepare('SELECT COUNT(*) n FROM t').get(), { n: 0 });
});

test('a write allowed to wait commits with the next immediate write instead of waiting out its time', async (t) => {
  const { db, queue, rows } = setup(t);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const patient = queue.run(() => insert.run(1), 10_000);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(rows(), [], 'still waiting for company');
  const started = performance.now();
  await Promise.all([patient, queue.run(() => insert.run(2))]);
  assert.ok(performance.now() - started < 5_000, 'the immediate write took the waiting one along');
  assert.deepEqual(rows(), [1, 2]);
});

test('alone, a write allowed to wait commits when its wait is over', async (t) => {
  const { db, queue, rows } = setup(t);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const started = performance.now();
  await queue.run(() => insert.run(7), 30);
  assert.ok(performance.now() - started >= 25, 'it waited for company');
  assert.deepEqual(rows(), [7]);
});

test('statements commit like any write, each resolving with its changes', async (t) => {
  const { queue, rows } = setup(t);
  const changes = await queue.runStatements([
    { sql: 'INSERT INTO t (v) VALUES (@v)', params: { v: 1 } },
    { sql: 'INSERT OR IGNORE INTO t (v) VALUES (@v)', params: { v: 1 } },
  ]);
  assert.deepEqual(changes, [1, 0]);
  assert.deepEqual(rows(), [1]);
});

test('with the db thread, batches of statements alone commit there, and later writes wait for them', async (t) => {
  const { db, queue, rows } = setup(t);
  const thread = startDbThread(db, { busyTimeoutMs: 1000, onError: (e) => assert.fail(e) });
  t.after(() => thread.stop());
  queue.useThread(thread);
  const externalCommits = () => db.pragma('data_version', { simple: true });
  const before = externalCommits();
  const offLoop = queue.runStatements([{ sql: 'INSERT INTO t (v) VALUES (@v)', params: { v: 1 } }]);
  await new Promise((r) => setImmediate(r));
  // Queued while the thread commits (its answer cannot come within this turn):
  // it must not take the lock first, and it sees the row.
  const seen = queue.run(() => (db.prepare('INSERT INTO t (v) VALUES (2)').run(), rows()));
  assert.deepEqual(await offLoop, [1]);
  assert.deepEqual(await seen, [1, 2]);
  assert.notEqual(externalCommits(), before, 'the statements were committed by the thread\'s connection');
  const afterThread = externalCommits();
  // Mixed with a function write, statements run here, in the same commit.
  await Promise.all([queue.runStatements([{ sql: 'INSERT INTO t (v) VALUES (@v)', params: { v: 3 } }]), queue.run(() => db.prepare('INSERT INTO t (v) VALUES (4)').run())]);
  assert.equal(externalCommits(), afterThread);
  queue.useThread(null);
  await queue.runStatements([{ sql: 'INSERT INTO t (v) VALUES (@v)', params: { v: 5 } }]);
  assert.equal(externalCommits(), afterThread, 'without the thread, statements commit on this connection');
  assert.deepEqual(rows(), [1, 2, 3, 4, 5]);
});

test('while the thread copies the WAL for a restart, queued writes wait, then commit in order; the pause is asked for once', async (t) => {
  const { db, queue, rows } = setup(t);
  let release!: () => void;
  let pauses = 0;
  // The thread's side of the pause, held by the test: only wantsWalRestart and restartWal are used for it.
  const thread = {
    running: true,
    wantsWalRestart: true,
    commit: () => assert.fail('no batch of statements was sent'),
    restartWal() {
      pauses++;
      this.wantsWalRestart = false;
      return new Promise<void>((resolve) => (release = resolve));
    },
    stop: () => Promise.resolve(),
  };
  queue.useThread(thread);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const first = queue.run(() => insert.run(1));
  await new Promise((r) => setImmediate(r));
  const second = queue.run(() => insert.run(2));
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(rows(), [], 'nothing commits during the pause');
  assert.equal(pauses, 1);
  release();
  await Promise.all([first, second]);
  assert.deepEqual(rows(), [1, 2]);
  await queue.run(() => insert.run(3));
  assert.equal(pauses, 1, 'no pause once the thread stopped asking');
  assert.deepEqual(rows(), [1, 2, 3]);
});

test('while another process holds the write lock, writes wait without blocking the event loop, then commit', async (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'q.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
  t.after(() => db.close());
  const queue = createWriteQueue(db);
  assert.equal(db.pragma('busy_timeout', { simple: true }), 5000, 'making the queue leaves the busy timeout alone (other writers rely on it)');
  const lock = holdWriteLock(t, join(dir, 'q.db'));
  const first = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run().changes);
  await lock.assertLoopTurnsFor(150);
  const second = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (2)').run().changes);
  await lock.assertLoopTurnsFor(50);
  lock.release();
  assert.deepEqual(await Promise.all([first, second]), [1, 1], 'both wrote once the lock was free, in order');
  assert.deepEqual(db.prepare('SELECT v FROM t ORDER BY v').pluck().all(), [1, 2]);
  assert.equal(db.pragma('busy_timeout', { simple: true }), 5000, "the connection's own busy timeout is left as it was");
});

test('a write queued as the database closes is refused, not thrown from a timer', async (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'q.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER PRIMARY KEY)');
  const queue = createWriteQueue(db);
  const late = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run().changes);
  db.close();
  await assert.rejects(late, (err: { code?: string }) => err.code === 'database_unavailable');
});

const turn = () => new Promise((r) => setImmediate(r));

test('with a WalSync, a batch commits without SQLite\'s fsync and settles only once the fdatasync returned; the next batch commits after it', async (t) => {
  const { db, queue, rows } = setup(t);
  db.pragma('synchronous = FULL');
  const held = heldSync();
  await queue.useWalSync(held.sync);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  let settled = false;
  const first = queue.run(() => insert.run(1).changes).then((v) => ((settled = true), v));
  await turn();
  assert.deepEqual(rows(), [1], 'committed: visible to this connection');
  assert.equal(held.requested, 1);
  assert.equal(settled, false, 'not settled before the fdatasync returned');
  assert.equal(db.pragma('synchronous', { simple: true }), 2, 'the connection is FULL again for writes outside the queue');
  const durable = queue.durable();
  assert.ok(durable, 'readers are told to wait');

  const second = queue.run(() => insert.run(2).changes);
  await turn();
  assert.deepEqual(rows(), [1], 'the next batch waits for the fdatasync in flight');

  held.finish();
  assert.equal(await first, 1);
  await durable;
  await turn();
  assert.deepEqual(rows(), [1, 2]);
  assert.equal(held.requested, 1, 'the second batch waits for its own fdatasync');
  held.finish();
  assert.equal(await second, 1);
  assert.equal(queue.durable(), null, 'nothing waits for the disk');
});

test('a failed fdatasync refuses its batch and every later write, and is reported once', async (t) => {
  const { db, queue } = setup(t);
  const held = heldSync();
  const failures: Error[] = [];
  await queue.useWalSync(held.sync, (err) => failures.push(err));
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const first = queue.run(() => insert.run(1));
  await turn();
  held.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await assert.rejects(first, (err: Error & { code?: string }) => err.code === 'database_unavailable' && /may or may not be saved/.test(err.message));
  await assert.rejects(queue.run(() => insert.run(2)), (err: Error & { code?: string }) => err.code === 'database_unavailable');
  assert.equal(held.requested, 0, 'no later batch was committed');
  assert.equal(failures.length, 1);
});

test('after a failed fdatasync, readers are refused: those that waited for it and every later one', async (t) => {
  const { db, queue } = setup(t);
  const held = heldSync();
  await queue.useWalSync(held.sync);
  const write = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run());
  await turn();
  let read = 0;
  const waited = queue.whenDurable(() => ++read);
  const answer = queue.durable();
  held.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await assert.rejects(write);
  const refused = (err: Error & { code?: string }) => err.code === 'database_unavailable';
  await assert.rejects(Promise.resolve(waited), refused);
  await assert.rejects(answer!, refused);
  await assert.rejects(Promise.resolve(queue.whenDurable(() => ++read)), refused);
  await assert.rejects(queue.durable()!, refused);
  assert.equal(read, 0, 'nothing was read for an answer');
});

test('a WalSync failing at once (no descriptor) refuses like any failed fdatasync, and detaching it still returns', async (t) => {
  const { db, queue } = setup(t);
  const failing: WalSync = { sync: (done) => done(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })), close() {} };
  await queue.useWalSync(failing);
  await assert.rejects(queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run()), (err: Error & { code?: string }) => err.code === 'database_unavailable');
  await assert.rejects(queue.durable()!, (err: Error & { code?: string }) => err.code === 'database_unavailable');
  await queue.useWalSync(null);
});

test('with a WalSync, a write failing alone keeps its own error and waits for no fdatasync; beside a failed fdatasync too', async (t) => {
  const { db, queue } = setup(t);
  const held = heldSync();
  await queue.useWalSync(held.sync);
  await assert.rejects(queue.run(() => { throw new Error('mine'); }), /mine/);
  assert.equal(held.requested, 0, 'nothing was committed, so nothing synced');
  const ok = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run());
  const bad = queue.run(() => { throw new Error('mine too'); });
  await turn();
  held.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await assert.rejects(ok, (err: Error & { code?: string }) => err.code === 'database_unavailable');
  await assert.rejects(bad, /mine too/);
});

test('an fdatasync failing with ENOSPC refuses with disk_full', async (t) => {
  const { db, queue } = setup(t);
  const held = heldSync();
  await queue.useWalSync(held.sync);
  const write = queue.run(() => db.prepare('INSERT INTO t (v) VALUES (1)').run());
  await turn();
  held.finish(Object.assign(new Error('ENOSPC: no space left on device, fdatasync'), { code: 'ENOSPC' }));
  await assert.rejects(write, (err: Error & { code?: string }) => err.code === 'disk_full');
  await assert.rejects(queue.durable()!, (err: Error & { code?: string }) => err.code === 'disk_full');
});

test('detaching the WalSync waits for the fdatasync in flight; later batches commit with SQLite\'s fsync again', async (t) => {
  const { db, queue, rows } = setup(t);
  const held = heldSync();
  await queue.useWalSync(held.sync);
  const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
  const first = queue.run(() => insert.run(1));
  await turn();
  let detached = false;
  const detach = queue.useWalSync(null).then(() => (detached = true));
  await turn();
  assert.equal(detached, false);
  held.finish();
  await Promise.all([first, detach]);
  await queue.run(() => insert.run(2));
  assert.equal(held.requested, 0);
  assert.deepEqual(rows(), [1, 2]);
});
