// A backup restored hands out again the addresses of the invoices made after
// it: `till serve` on it says so, naming each active key and the command that
// skips past them, until each was skipped. The original never says it.
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { keysToSkipAfterRestore, markBackupCopy } from '../../../src/services/restored-backup.ts';
import { listXpubs, retireXpub, skipIndexes } from '../../../src/services/xpubs.ts';
import { tillJson } from '../../helpers/cli.ts';
import { startServe } from '../../helpers/serve.ts';
import { setupStore, startTestTill } from '../../helpers/till-server.ts';
import { tempDir } from '../../helpers/temp.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const WARNING = /^till: warning: this database is a backup taken at (\S+): the addresses of invoices made after that are handed out again/m;

test('a restored backup warns at start, naming each active key to skip, until it was skipped; the original never does', async (t) => {
  const dataDir = tempDir(t);
  const original = await startServe(dataDir);
  await original.stop();
  const [xpub] = await tillJson<Array<{ id: string; status: string }>>(['xpub', 'list', '--store', original.storeId], { dataDir });
  assert.equal(xpub!.status, 'active');
  const backup = await tillJson<{ path: string; files: string[] }>(['backup', '--out', tempDir(t)], { dataDir });

  const again = await startServe(dataDir, { seeded: true });
  await again.stop();
  assert.doesNotMatch(again.errors(), /warning/, 'the original data dir is no backup');

  const restored = tempDir(t);
  for (const f of backup.files) copyFileSync(join(backup.path, f), join(restored, f));
  const first = await startServe(restored, { seeded: true });
  t.after(() => first.stop());
  const warned = await waitFor(() => WARNING.exec(first.errors()), 'the warning');
  assert.ok(Math.abs(Date.parse(warned[1]!) - Date.now()) < 60_000, 'it says when the backup was taken');
  assert.match(first.errors(), new RegExp(`skip past them, with a count above the invoices made since: npm run till -- xpub skip ${xpub!.id} <count> \\(docs/CONFIG.md, "Backups"\\)`, 'i'));
  // A monitor sees it too, without taking the till out of service.
  const health = await fetch(`${first.url}/healthz`);
  const report = (await health.json()) as { status: string; restored_backup: unknown };
  assert.equal(health.status, 200);
  assert.equal(report.status, 'ok');
  assert.deepEqual(report.restored_backup, { taken_at: warned[1], keys_to_skip: [xpub!.id] });
  await first.stop();

  // Started again, it still says so: nothing was skipped.
  const second = await startServe(restored, { seeded: true });
  await waitFor(() => WARNING.test(second.errors()), 'the warning again');
  await second.stop();

  await tillJson(['xpub', 'skip', xpub!.id, '50'], { dataDir: restored });
  const skipped = await startServe(restored, { seeded: true });
  t.after(() => skipped.stop());
  const res = await fetch(`${skipped.url}/healthz`);
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { restored_backup: unknown }).restored_backup, null);
  assert.doesNotMatch(skipped.errors(), /warning/, 'skipped: nothing more to say');
});

test('the mark: each active key until skipped or retired, and a row that is not what till backup writes says nothing', async (t) => {
  const till = await startTestTill(t);
  const { ctx } = till.rt;
  const [a, b] = [setupStore(till), setupStore(till)].map((s) => listXpubs(ctx, s.storeId)[0]!.id);
  assert.equal(keysToSkipAfterRestore(ctx), null, 'no backup, no mark');
  markBackupCopy(ctx.db, Date.parse('2026-11-28T03:00:00Z'));
  assert.deepEqual(keysToSkipAfterRestore(ctx), { takenAt: '2026-11-28T03:00:00.000Z', xpubIds: [a, b].sort() });
  skipIndexes(ctx, a!, 10);
  assert.deepEqual(keysToSkipAfterRestore(ctx)?.xpubIds, [b]);
  retireXpub(ctx, b!);
  assert.equal(keysToSkipAfterRestore(ctx), null, 'a retired key hands out nothing');

  ctx.repos.meta.set('backup_copy', JSON.stringify({ takenAt: '2026-11-28T03:00:00Z', xpubIds: [a] }));
  assert.deepEqual(keysToSkipAfterRestore(ctx)?.xpubIds, [a], 'a skip before the mark was written does not count');
  for (const edited of ['{', '[]', '{"takenAt":"yesterday","xpubIds":[]}', `{"takenAt":"2026-11-28T03:00:00Z","xpubIds":[1]}`, `{"takenAt":"2026-11-28T03:00:00Z"}`]) {
    ctx.repos.meta.set('backup_copy', edited.replace('[]}', `["${a}"]}`));
    assert.equal(keysToSkipAfterRestore(ctx), null, edited);
  }
});
