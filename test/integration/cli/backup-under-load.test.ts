// `till backup` run while `till serve` creates invoices (a nightly cron on a
// busy till): the server keeps answering, and the backup, restored, is a whole
// database holding every invoice answered before it began, each with its
// event, whose Idempotency-Keys still answer the first answer.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { tillJson } from '../../helpers/cli.ts';
import { assertNothingHalfWritten, postCreation, serveWithKeys, startCreationLoad } from '../../helpers/creation-load.ts';
import { startServe } from '../../helpers/serve.ts';
import { tempDir } from '../../helpers/temp.ts';
import { waitFor } from '../../helpers/wait-for.ts';

test('a backup taken under creation load restores to a whole database with every invoice answered before it began', async (t) => {
  const { dataDir, till, keys } = await serveWithKeys(t, 5);

  const load = startCreationLoad(till.url, keys, { inFlightPerKey: 2, pauseMs: 10 });
  t.after(() => load.stop());
  await waitFor(() => load.answered.size >= 30 || null, 'creations answered');
  const before = new Map(load.answered);
  const backup = await tillJson<{ path: string; files: string[] }>(['backup', '--out', tempDir(t)], { dataDir });
  const duringBackup = load.answered.size - before.size;
  await load.stop();
  assert.ok(duringBackup > 0, 'the server kept answering while the backup ran');
  for (const a of load.answered.values()) assert.equal(a.status, 201, a.text);
  await till.stop();

  const restored = tempDir(t);
  for (const f of backup.files) copyFileSync(join(backup.path, f), join(restored, f));
  const db = new Database(databasePath(restored), { readonly: true });
  t.after(() => db.close());
  assertNothingHalfWritten(db);
  const ids = new Set(db.prepare('SELECT id FROM invoices').pluck().all() as string[]);
  for (const a of before.values()) assert.ok(ids.has(JSON.parse(a.text).id), 'answered before the backup began, so in it');

  const back = await startServe(restored, { seeded: true });
  t.after(() => back.stop());
  for (const [c, a] of before) {
    const replay = await postCreation(back.url, c);
    assert.equal(replay.status, 201);
    assert.equal(await replay.text(), a.text, `${c.idempotencyKey}: the restored till answers the first answer`);
  }
});
