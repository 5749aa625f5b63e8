// `till serve` killed (SIGKILL) in the middle of a creation load, then started
// again on the same data dir: every creation it answered is there, each
// Idempotency-Key stands for exactly one invoice (a replay answers the first
// answer byte for byte; a request the crash left unanswered, sent again,
// creates it or finds it), no two invoices share an address, and none is half
// written. A killed process loses nothing the kernel holds, so this checks
// what the process promises (answered means committed, in one transaction);
// what a power cut would take is the fdatasync's job (durability.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { assertNothingHalfWritten, postCreation, serveWithKeys, startCreationLoad, type Creation } from '../../helpers/creation-load.ts';
import { startServe } from '../../helpers/serve.ts';
import { waitFor } from '../../helpers/wait-for.ts';

/** The crash comes once this many creations were answered: well under 100 a minute on each of 5 keys. */
const ANSWERED_BEFORE_CRASH = 120;

test('killed under creation load, a restarted till has every answered invoice, one per Idempotency-Key, none half written', async (t) => {
  const { dataDir, till: first, keys } = await serveWithKeys(t, 5);

  const load = startCreationLoad(first.url, keys);
  await waitFor(() => load.answered.size >= ANSWERED_BEFORE_CRASH || null, `${ANSWERED_BEFORE_CRASH} creations answered`);
  await first.crash();
  await load.stop();
  const { sent, answered } = load;
  const unanswered = sent.filter((s) => !answered.has(s));
  assert.ok(unanswered.length > 0, 'some requests were in flight when it died');
  for (const a of answered.values()) assert.equal(a.status, 201, a.text);

  const second = await startServe(dataDir, { seeded: true });
  t.after(() => second.stop());
  for (const [s, a] of answered) {
    const replay = await postCreation(second.url, s);
    assert.equal(replay.status, 201);
    assert.equal(await replay.text(), a.text, `${s.idempotencyKey}: the first answer, byte for byte`);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  }
  const idOf = new Map<Creation, string>([...answered].map(([s, a]) => [s, JSON.parse(a.text).id]));
  for (const s of unanswered) {
    const res = await postCreation(second.url, s);
    assert.equal(res.status, 201, `${s.idempotencyKey} sent again`);
    const inv = await res.json();
    assert.equal(inv.amount_sats, JSON.parse(s.body).amount_sats);
    idOf.set(s, inv.id);
  }
  // Sent again, each unanswered request still names one invoice: a second replay is the first.
  for (const s of unanswered) assert.equal((await (await postCreation(second.url, s)).json()).id, idOf.get(s));

  const listed: Array<{ id: string; address: string }> = [];
  for (let after = ''; ; ) {
    const page = await (await fetch(`${second.url}/v1/invoices?limit=100${after && `&starting_after=${after}`}`, { headers: { authorization: `Bearer ${first.key}` } })).json();
    listed.push(...page.data);
    if (!page.has_more) break;
    after = page.data.at(-1).id;
  }
  assert.deepEqual(new Set(listed.map((i) => i.id)), new Set(idOf.values()), 'one invoice per Idempotency-Key sent, and no other');
  assert.equal(listed.length, sent.length);
  assert.equal(new Set(listed.map((i) => i.address)).size, listed.length, 'no two invoices share an address');

  await second.stop();
  const db = new Database(databasePath(dataDir), { readonly: true });
  t.after(() => db.close());
  assertNothingHalfWritten(db);
});
