import assert from 'node:assert/strict';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { startCheckpointer, WRITER_CHECKPOINT_PAGES } from '../../../src/db/checkpointer.ts';
import { tempDir } from '../../helpers/temp.ts';

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

test('committed pages reach the database file from the checkpoint thread', async (t) => {
  const { db, rowsInFile, writeAll } = setup(t);
  const errors: Error[] = [];
  const checkpointer = startCheckpointer(db, { intervalMs: 20, busyTimeoutMs: 1000, onError: (e) => errors.push(e) });
  t.after(() => checkpointer.stop().then(() => db.close()));
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

test('stop ends the thread; the database then closes as usual and removes its WAL', async (t) => {
  const { db, dir, writeAll } = setup(t);
  const checkpointer = startCheckpointer(db, { intervalMs: 20, busyTimeoutMs: 1000, onError: (e) => assert.fail(e) });
  writeAll();
  await checkpointer.stop();
  await checkpointer.stop();
  db.close();
  assert.equal(existsSync(join(dir, 'c.db-wal')), false);
});
