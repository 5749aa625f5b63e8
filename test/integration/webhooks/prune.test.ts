import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../../src/clock.ts';
import { answer } from '../../fakes/webhook-receiver.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { createInvoice, deliveriesOf, startWebhookFixture } from './helpers.ts';

// `till deliveries prune` (docs/WEBHOOKS.md, Keeping the database small): run
// as a separate process beside a running till, as an operator's timer would.

const DAY = 24 * 3600_000;

describe('till deliveries prune', () => {
  test('deletes delivered history older than the cutoff and nothing else; a dry run counts the same and deletes nothing', async (t) => {
    // The till's clock starts 100 days back; the CLI runs on the real one.
    const f = await startWebhookFixture(t, { clock: new ManualClock(Date.now() - 100 * DAY) });
    const { till } = f;
    const db = till.rt.ctx.db;
    // The refusing endpoint takes `late`'s deliveries once `takeLate` is set: delivered after the cutoff.
    let takeLate = '';
    f.receiver.respondWith((req) => (req.url.startsWith('/refuse') && !(takeLate && req.body.includes(takeLate)) ? answer.status(500) : answer.status(200)));
    const refused = { till, store: setupStore(till) };
    const endpoint = await call(till, 'POST', `/v1/stores/${refused.store.storeId}/webhooks`, { key: refused.store.key, body: { url: `${f.receiver.url}/refuse`, enabled_events: ['*'] } });
    assert.equal(endpoint.status, 201, endpoint.text);

    const delivered = await createInvoice(f);
    assert.equal((await call(till, 'POST', `/v1/invoices/${delivered.id}/simulate`, { key: f.store.key, body: { event: 'paid' } })).status, 200);
    const undelivered = await createInvoice(refused);
    const late = await createInvoice(refused);
    const testCall = await call(till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/test`, { key: f.store.key });
    assert.equal(testCall.body.status, 'success', 'an old webhook.test, delivered');
    const deliveriesOfInvoice = (id: string) => deliveriesOf(till).filter((d) => till.rt.ctx.repos.events.listForInvoice(id).some((e) => e.id === d.event_id));
    const settle = async () => {
      await till.rt.webhooks.runOnce();
      await waitFor(() => deliveriesOf(till).every((d) => d.status !== 'attempting' || d.attempts > 0), 'every delivery tried');
    };
    await settle();
    assert.ok(deliveriesOfInvoice(delivered.id).every((d) => d.status === 'success'));
    assert.ok(deliveriesOfInvoice(undelivered.id).every((d) => d.status === 'attempting'));
    // A day ago: history newer than the cutoff, and `late`'s retry delivered.
    till.clock.advance(99 * DAY);
    takeLate = late.id;
    const recent = await createInvoice(f);
    await settle();
    await waitFor(() => deliveriesOfInvoice(late.id)[0]?.status === 'success', "late's retry delivered");

    const count = () => ({
      events: db.prepare('SELECT COUNT(*) AS n FROM events').get(),
      deliveries: db.prepare('SELECT COUNT(*) AS n FROM webhook_deliveries').get(),
      attempts: db.prepare('SELECT COUNT(*) AS n FROM webhook_attempts').get(),
    });
    const before = count();
    const oldEvents = till.rt.ctx.repos.events.listForInvoice(delivered.id);
    const oldDeliveries = deliveriesOfInvoice(delivered.id);
    const oldAttempts = oldDeliveries.reduce((n, d) => n + till.rt.ctx.repos.webhookDeliveries.attempts(d.id).length, 0);
    assert.ok(oldEvents.length >= 2 && oldAttempts >= oldEvents.length, 'the paid invoice has its events, each delivered');
    const invoiceBefore = (await call(till, 'GET', `/v1/invoices/${delivered.id}`, { key: f.store.key })).body;
    // The paid invoice's history and the webhook.test go; `undelivered`'s and `late`'s stay.
    const expected = { events: oldEvents.length + 1, deliveries: oldDeliveries.length + 1, attempts: oldAttempts + 1, kept_events: 2 };

    const prune = async (...args: string[]) => {
      const r = await runTillBeside(till, ['--json', 'deliveries', 'prune', '--older-than', '90', ...args]);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.ok(Math.abs(Date.parse(out.before) - (Date.now() - 90 * DAY)) < 60_000, out.before);
      return out;
    };
    const dry = await prune('--dry-run');
    assert.deepEqual({ ...dry, before: 0 }, { before: 0, dry_run: true, ...expected });
    assert.deepEqual(count(), before, 'a dry run deletes nothing');

    const done = await prune();
    assert.deepEqual({ ...done, before: 0 }, { before: 0, dry_run: false, ...expected });
    assert.deepEqual(till.rt.ctx.repos.events.listForInvoice(delivered.id), []);
    assert.deepEqual(deliveriesOfInvoice(undelivered.id).map((d) => d.status), ['attempting'], 'a delivery not delivered stays, to be retried or replayed');
    assert.ok(till.rt.ctx.repos.webhookDeliveries.attempts(deliveriesOfInvoice(undelivered.id)[0]!.id).length > 0, 'with its attempts');
    assert.equal(deliveriesOfInvoice(recent.id).length, 1, 'newer history stays');
    assert.equal(deliveriesOfInvoice(late.id).length, 1, 'so does history delivered since the cutoff');
    assert.equal(till.rt.ctx.repos.webhookDeliveries.get(testCall.body.id), null, 'the webhook.test delivery is gone');
    assert.deepEqual((await call(till, 'GET', `/v1/invoices/${delivered.id}`, { key: f.store.key })).body, invoiceBefore, 'the invoice and its payments stay');
    const after = count() as Record<string, { n: number }>;
    assert.equal(after.events!.n, (before.events as { n: number }).n - expected.events);

    const again = await runTillBeside(till, ['deliveries', 'prune', '--older-than', '90']);
    assert.match(again.stdout, /^deleted 0 events, 0 deliveries and 0 attempts from before \S+Z; kept 2 older events with a delivery not delivered, or delivered since\n$/);

    // The running till goes on delivering.
    const next = await createInvoice(f);
    await settle();
    assert.deepEqual(deliveriesOfInvoice(next.id).map((d) => d.status), ['success']);
  });

  test('a long prune commits in small transactions, and a till creating invoices beside it has every one made', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const db = till.rt.ctx.db;
    const old = till.clock.now() - 100 * DAY;
    // 20,000 delivered events of the shape the worker leaves: 40 of the prune's transactions.
    db.transaction(() => {
      db.prepare(
        `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 20000)
         INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body, dispatched)
         SELECT 'evt_old' || i, 'invoice.created', ?, NULL, 0, ? + i, printf('%.1000c', 'x'), 1 FROM n`,
      ).run(store.storeId, old);
      db.prepare(
        `INSERT INTO webhook_deliveries (id, event_id, store_id, endpoint_id, target, url, status, attempts, total_attempts, created_at, completed_at)
         SELECT 'dlv_' || substr(id, 5), id, store_id, NULL, 'callback:http://127.0.0.1:9', 'http://127.0.0.1:9/cb', 'success', 1, 1, created_at, created_at FROM events`,
      ).run();
      db.prepare(`INSERT INTO webhook_attempts (delivery_id, n, started_at, duration_ms, status_code) SELECT id, 1, created_at, 5, 200 FROM webhook_deliveries`).run();
    })();
    let pruning = true;
    const prune = runTillBeside(till, ['--json', 'deliveries', 'prune', '--older-than', '90']).finally(() => (pruning = false));
    const statuses: number[] = [];
    // data_version moves on the till's connection with each commit another connection makes.
    const commitsSeen = new Set<unknown>();
    while (pruning) {
      till.clock.advance(1000); // under the key's 100 creations a minute
      statuses.push((await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 1000 } })).status);
      commitsSeen.add(db.pragma('data_version', { simple: true }));
    }
    const r = await prune;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).events, 20_000);
    assert.ok(commitsSeen.size >= 5, `the prune's commits seen between creations: ${commitsSeen.size}`);
    assert.deepEqual(statuses.filter((s) => s !== 201), []);
  });

  test('an event dated ahead of now (written while the clock ran fast) is kept and does not stop the prune', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const db = till.rt.ctx.db;
    const now = Date.now(); // the CLI's clock
    // Written in this order: old, a year ahead, old again; each with one delivered delivery.
    const insert = db.prepare(`INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body, dispatched) VALUES (?, 'invoice.created', ?, NULL, 0, ?, '{}', 1)`);
    const deliver = db.prepare(
      `INSERT INTO webhook_deliveries (id, event_id, store_id, endpoint_id, target, url, status, attempts, total_attempts, created_at, completed_at)
       VALUES (?, ?, ?, NULL, 'callback:http://127.0.0.1:9', 'http://127.0.0.1:9/cb', 'success', 1, 1, ?, ?)`,
    );
    for (const [id, at] of [['evt_a', now - 100 * DAY], ['evt_ahead', now + 365 * DAY], ['evt_b', now - 99 * DAY]] as const) {
      insert.run(id, store.storeId, at);
      deliver.run(`dlv_${id}`, id, store.storeId, at, at);
    }
    const r = await runTillBeside(till, ['--json', 'deliveries', 'prune', '--older-than', '90']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual({ ...JSON.parse(r.stdout), before: 0 }, { before: 0, dry_run: false, events: 2, deliveries: 2, attempts: 0, kept_events: 0 });
    assert.deepEqual(db.prepare('SELECT id FROM events').pluck().all(), ['evt_ahead']);
  });

  test('refuses a missing or out-of-range --older-than, deleting nothing', async (t) => {
    const f = await startWebhookFixture(t, { clock: new ManualClock(Date.now() - 100 * DAY) });
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    await waitFor(() => deliveriesOf(f.till).every((d) => d.status === 'success'), 'the delivery');
    const invalid: { args: string[]; error: RegExp }[] = [
      { args: [], error: /required option '--older-than <days>' not specified/ },
      { args: ['--older-than', '0'], error: /--older-than must be from 1 to 36500/ },
      { args: ['--older-than', '-5'], error: /--older-than must be from 1 to 36500/ },
      { args: ['--older-than', '90d'], error: /--older-than must be a whole number/ },
      { args: ['--older-than', '1.5'], error: /--older-than must be a whole number/ },
    ];
    for (const { args, error } of invalid) {
      const r = await runTillBeside(f.till, ['deliveries', 'prune', ...args]);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.match(r.stderr, error);
    }
    assert.equal(deliveriesOf(f.till).length, 1, 'nothing deleted');
  });
});
