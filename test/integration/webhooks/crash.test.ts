// `till serve` killed (SIGKILL) while deliveries are in flight, then started
// again: every event still reaches the merchant's receiver (at least once),
// the attempts the crash cut off are made again, a resent event carries the
// same bytes, and every request, before and after, is signed with the
// store's callback secret.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { verifyWebhook } from '../../../src/webhooks/signature.ts';
import { answer, startWebhookReceiver, type ReceivedRequest } from '../../fakes/webhook-receiver.ts';
import { startServe } from '../../helpers/serve.ts';
import { tempDir } from '../../helpers/temp.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const INVOICES = 40;
/** The receiver answers this many deliveries, then holds every later one open until the crash. */
const ANSWERED_BEFORE_CRASH = 10;
/** Attempts held open at the crash: half of the 16 a till keeps in flight to one receiver (it reads more once down to half). */
const HELD_AT_CRASH = 8;

const eventOf = (r: ReceivedRequest): { event_id: string; event_type: string; data: { invoice: { id: string } } } => JSON.parse(r.body);

test('killed with deliveries in flight, a restarted till sends them again: every event arrives, signed, the same bytes', async (t) => {
  const receiver = await startWebhookReceiver();
  t.after(() => receiver.close());
  const dataDir = tempDir(t);
  const env = { TILL_ALLOW_PRIVATE_CALLBACKS: 'true' };
  const first = await startServe(dataDir, { env });
  t.after(() => first.crash());
  const secret = /whsec_[0-9A-Za-z]+/.exec(first.output())![0];

  const held = new Set<string>();
  let acknowledged = 0;
  receiver.respondWith((r) => {
    if (acknowledged++ < ANSWERED_BEFORE_CRASH) return answer.status(200);
    held.add(eventOf(r).event_id);
    return answer.hang();
  });
  const invoiceIds: string[] = [];
  for (let i = 0; i < INVOICES; i++) {
    const res = await fetch(`${first.url}/v1/invoices`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount_sats: 1000 + i, callback_url: `${receiver.url}/hooks/till` }),
    });
    assert.equal(res.status, 201);
    invoiceIds.push((await res.json()).id);
  }
  await waitFor(() => held.size >= HELD_AT_CRASH || null, 'the receiver holding attempts open');
  await first.crash();

  const delivered = new Set<string>();
  receiver.respondWith((r) => {
    delivered.add(eventOf(r).event_id);
    return answer.status(200);
  });
  const second = await startServe(dataDir, { seeded: true, env });
  t.after(() => second.stop());
  const db = new Database(databasePath(dataDir), { readonly: true });
  t.after(() => db.close());
  const statuses = () => db.prepare('SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status').all();
  await waitFor(() => JSON.stringify(statuses()) === JSON.stringify([{ status: 'success', n: INVOICES }]) || null, 'every delivery recorded as a success');

  for (const id of held) assert.ok(delivered.has(id), `${id}, cut off by the crash, was sent again`);
  const bodies = new Map<string, string>();
  for (const r of receiver.requests) {
    const signed = verifyWebhook(r.rawBody, r.headers['x-service-signature'] as string, [secret], { now: Date.now() });
    assert.equal(signed.ok, true, 'signed with the callback secret');
    const event = eventOf(r);
    assert.equal(event.event_type, 'invoice.created');
    assert.equal(bodies.get(event.event_id) ?? r.body, r.body, `${event.event_id}: a resend is the same bytes`);
    bodies.set(event.event_id, r.body);
  }
  const createdFor = new Set([...bodies.values()].map((b) => JSON.parse(b).data.invoice.id));
  assert.deepEqual(createdFor, new Set(invoiceIds), 'one event per invoice, every one of them delivered');
});
