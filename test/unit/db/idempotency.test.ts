import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../../src/db/connection.ts';
import { createIdempotencyRepo } from '../../../src/db/idempotency.ts';
import { migrate } from '../../../src/db/migrate.ts';
import { tempDir } from '../../helpers/temp.ts';

// The purge loop keeps the table to the last 24 hours of answers (src/runtime.ts):
// a till taking keyed creations for years must not keep every answer it gave.
test('purgeBefore deletes answers created before the cutoff, at most limit of them a call, and keeps the rest', (t) => {
  const db = openDatabase(tempDir(t));
  migrate(db);
  t.after(() => db.close());
  const repo = createIdempotencyRepo(db);
  const answer = (createdAt: number) => ({ requestHash: `h${createdAt}`, status: 201, body: `{"n":${createdAt}}`, createdAt });
  for (const createdAt of [100, 200, 300, 400]) repo.put('key_a', `k${createdAt}`, answer(createdAt));

  assert.equal(repo.purgeBefore(300, 1), 1, 'one of the two older answers');
  assert.equal(repo.purgeBefore(300, 10), 1, 'the other one');
  assert.equal(repo.purgeBefore(300, 10), 0);
  assert.equal(repo.get('key_a', 'k100'), null);
  assert.equal(repo.get('key_a', 'k200'), null);
  assert.deepEqual(repo.get('key_a', 'k300'), answer(300), 'created at the cutoff: kept');
  assert.deepEqual(repo.get('key_a', 'k400'), answer(400));
});
