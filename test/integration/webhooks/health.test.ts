import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UNDELIVERED_COUNT_CAP } from '../../../src/health.ts';
import { answer } from '../../fakes/webhook-receiver.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { createInvoice, deliveriesOf, startWebhookFixture } from './helpers.ts';

// What /healthz's `webhooks` section tells a monitor (docs/API.md, Health): the
// deliveries still attempted, and those that gave up in the last day, to alert on.

const DAY = 24 * 3600_000;

describe('/healthz webhooks', () => {
  test('a deleted endpoint\'s waiting retry, set aside as a dead letter no replay can send, is not reported', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.status(500));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    assert.equal(deliveriesOf(f.till)[0]!.status, 'attempting');
    // The merchant moves to a new receiver: the old endpoint goes, its waiting retry is set aside.
    assert.equal((await call(f.till, 'DELETE', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key })).status, 200);
    const [orphan] = deliveriesOf(f.till);
    assert.equal(orphan!.status, 'dead_letter');
    assert.match((await runTillBeside(f.till, ['deliveries', 'replay', orphan!.id])).stderr, /which was deleted; it cannot be replayed/);
    assert.deepEqual((await call(f.till, 'GET', '/healthz')).body.webhooks, { attempting: 0, failed_last_day: 0, dead_letters_last_day: 0 });
  });

  test('a receiver\'s refusal (4xx) is reported for a day, then clears by itself', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.status(410, 'gone'));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const webhooks = async () => (await call(f.till, 'GET', '/healthz')).body.webhooks;
    assert.deepEqual(await webhooks(), { attempting: 0, failed_last_day: 1, dead_letters_last_day: 0 });
    f.till.clock.advance(DAY - 1000);
    assert.equal((await webhooks()).failed_last_day, 1);
    f.till.clock.advance(2000);
    assert.equal((await webhooks()).failed_last_day, 0, 'still listed by till deliveries list, no longer alerting');
  });

  test('each count stops at its cap, whatever the backlog (the route takes no key and answers on the event loop)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const db = till.rt.ctx.db;
    const now = till.clock.now();
    const rows = UNDELIVERED_COUNT_CAP + 2_000;
    // Rows of the shape the worker leaves, in SQL for speed: a third waiting for a retry, a third dead letters
    // of the last hour, a third dead letters of last week.
    db.transaction(() => {
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
         INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body) SELECT 'evt_backlog' || i, 'invoice.created', ?, NULL, 0, ?, '{}' FROM n`,
      ).run(3 * rows, store.storeId, now);
      db.prepare(
        `INSERT INTO webhook_deliveries (id, event_id, store_id, endpoint_id, target, url, status, attempts, total_attempts, next_attempt_at, last_error, created_at, completed_at)
         SELECT 'dlv_' || substr(id, 5), id, store_id, NULL, 'callback:http://127.0.0.1:9', 'http://127.0.0.1:9/cb',
           CASE seq % 3 WHEN 0 THEN 'attempting' ELSE 'dead_letter' END, 3, 3, CASE seq % 3 WHEN 0 THEN ? END, 'HTTP 503', created_at,
           CASE seq % 3 WHEN 1 THEN ? WHEN 2 THEN ? END FROM events WHERE id LIKE 'evt_backlog%'`,
      ).run(now + 60_000, now - 3600_000, now - 7 * DAY);
    })();
    assert.deepEqual(till.rt.health().webhooks, { attempting: UNDELIVERED_COUNT_CAP, failed_last_day: 0, dead_letters_last_day: UNDELIVERED_COUNT_CAP });
  });
});
