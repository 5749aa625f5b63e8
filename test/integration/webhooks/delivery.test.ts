import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openSecretBox } from '../../../src/auth/secret-box.ts';
import { loadConfig } from '../../../src/config.ts';
import { databasePath } from '../../../src/db/connection.ts';
import { silentLogger } from '../../../src/log.ts';
import { createRuntime } from '../../../src/runtime.ts';
import { SENDING_SECRETS_TTL_MS } from '../../../src/db/webhook-endpoints.ts';
import { RETRY_DELAYS_MS } from '../../../src/webhooks/schedule.ts';
import { UNREADABLE_SECRET } from '../../../src/webhooks/delivery-worker.ts';
import { verifyWebhook } from '../../../src/webhooks/signature.ts';
import { answer } from '../../fakes/webhook-receiver.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { tempDir } from '../../helpers/temp.ts';
import { call, setupStore } from '../../helpers/till-server.ts';
import { addEndpointsOnReceiver, createInvoice, deliveriesOf, startWebhookFixture } from './helpers.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';
import { waitFor } from '../../helpers/wait-for.ts';

describe('webhook delivery', () => {
  test('a delivery carries the spec headers and a signature over the exact body', async (t) => {
    const f = await startWebhookFixture(t);
    const invoice = await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [req] = await f.receiver.waitForRequests(1, 5000);
    assert.equal(req!.method, 'POST');
    assert.equal(req!.url, '/hooks');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.equal(req!.headers['user-agent'], 'Service-Webhook/1.0');
    const body = JSON.parse(req!.body);
    assert.deepEqual(Object.keys(body), ['event_id', 'event_type', 'created_at', 'livemode', 'data']);
    assert.match(body.event_id, /^evt_/);
    assert.equal(req!.headers['x-service-event-id'], body.event_id);
    assert.equal(body.event_type, 'invoice.created');
    assert.equal(req!.headers['x-service-event-type'], 'invoice.created');
    assert.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(body.livemode, false);
    assert.equal(body.data.invoice.id, invoice.id);
    const stored = f.till.rt.ctx.db.prepare('SELECT body FROM events WHERE id = ?').get(body.event_id) as { body: string };
    assert.equal(req!.body, stored.body, 'the body on the wire is the outbox body, byte for byte');
    const sig = String(req!.headers['x-service-signature']);
    assert.match(sig, /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.equal(Number(/t=(\d+)/.exec(sig)![1]), Math.floor(f.till.clock.now() / 1000));
    assert.deepEqual(verifyWebhook(req!.rawBody, sig, [f.secret], { now: f.till.clock.now() }), { ok: true, timestamp: Math.floor(f.till.clock.now() / 1000) });
    assert.equal(verifyWebhook(req!.rawBody, sig, ['whsec_wrong'], { now: f.till.clock.now() }).ok, false);
    assert.equal(deliveriesOf(f.till)[0]!.status, 'success');
  });

  test('the change, its event and its deliveries commit together: due at once, nothing left in the outbox', async (t) => {
    const f = await startWebhookFixture(t);
    const invoice = await createInvoice(f, { amount_sats: 1000, callback_url: 'http://127.0.0.1:9/cb' });
    const events = f.till.rt.ctx.repos.events.listForInvoice(invoice.id);
    assert.deepEqual(events.map((e) => e.type), ['invoice.created']);
    const deliveries = deliveriesOf(f.till);
    assert.deepEqual(deliveries.map((d) => [d.event_id, d.endpoint_id === null ? 'callback' : 'endpoint', d.status]).sort(), [
      [events[0]!.id, 'callback', 'attempting'],
      [events[0]!.id, 'endpoint', 'attempting'],
    ]);
    assert.equal(f.till.rt.ctx.repos.events.hasUndispatched(), false);
  });

  test('events written undispatched (by an older Till) are dispatched by the worker, once', async (t) => {
    const f = await startWebhookFixture(t);
    const invoice = await createInvoice(f);
    const [created] = f.till.rt.ctx.repos.events.listForInvoice(invoice.id);
    f.till.rt.ctx.db.prepare('DELETE FROM webhook_deliveries').run();
    const id = 'evt_0000000000aaaaaaaaaaaaaaaa';
    f.till.rt.ctx.repos.events.insert({ ...created!, id, body: created!.body.replace(created!.id, id) });
    assert.equal(f.till.rt.ctx.repos.events.hasUndispatched(), true);
    await f.till.rt.webhooks.runOnce();
    const [req] = await f.receiver.waitForRequests(1, 5000);
    assert.equal(req!.headers['x-service-event-id'], id);
    assert.equal(f.till.rt.ctx.repos.events.hasUndispatched(), false);
    await f.till.rt.webhooks.runOnce();
    assert.deepEqual(deliveriesOf(f.till).map((d) => [d.event_id, d.status]), [[id, 'success']]);
  });

  test("an invoice's callback_url gets its own delivery, signed with the store's callback secret", async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.paid'] });
    const rotated = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/callback-secret/rotate`, { key: f.store.key });
    assert.equal(rotated.status, 200);
    await createInvoice(f, { amount_sats: 1000, callback_url: `${f.receiver.url}/cb?order=7` });
    await f.till.rt.webhooks.runOnce();
    const [req] = await f.receiver.waitForRequests(1, 5000);
    assert.equal(req!.url, '/cb?order=7', 'the endpoint is not subscribed to invoice.created; the callback gets every event');
    const sig = String(req!.headers['x-service-signature']);
    assert.equal(sig.split(',').filter((p) => p.startsWith('v1=')).length, 2, 'the previous callback secret is still valid after the rotation');
    assert.equal(verifyWebhook(req!.rawBody, sig, [rotated.body.secret], { now: f.till.clock.now() }).ok, true);
  });

  test('two stores with callback URLs on the same server: each delivery signed with its own store\'s secret', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.paid'] });
    const other = setupStore(f.till, { label: 'second shop' });
    const secrets: Record<string, string> = {};
    for (const [name, store] of [['a', f.store], ['b', other]] as const) {
      const rotated = await call(f.till, 'POST', `/v1/stores/${store.storeId}/callback-secret/rotate`, { key: store.key });
      assert.equal(rotated.status, 200);
      secrets[name] = rotated.body.secret;
      await createInvoice({ till: f.till, store }, { amount_sats: 1000, callback_url: `${f.receiver.url}/cb/${name}` });
    }
    await f.till.rt.webhooks.runOnce();
    const requests = await f.receiver.waitForRequests(2, 5000);
    assert.deepEqual(requests.map((r) => r.url).sort(), ['/cb/a', '/cb/b']);
    const now = f.till.clock.now();
    for (const req of requests) {
      const [own, others] = req.url === '/cb/a' ? [secrets.a!, secrets.b!] : [secrets.b!, secrets.a!];
      const sig = String(req.headers['x-service-signature']);
      assert.equal(verifyWebhook(req.rawBody, sig, [own], { now }).ok, true, `${req.url} verifies with its store's secret`);
      assert.equal(verifyWebhook(req.rawBody, sig, [others], { now }).ok, false, `${req.url} is not signed with the other store's secret`);
    }
  });

  test('an answer whose status line came but whose body did not in time: shown as both (200, then the timeout), logged with its error', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 300, logger });
    f.receiver.respondWith(answer.slowBody({ status: 200, chunks: 10, intervalMs: 100 }));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [d] = deliveriesOf(f.till);
    assert.equal(d!.status, 'attempting');
    assert.match((await runTillBeside(f.till, ['deliveries', 'show', d!.id])).stdout, /#1 \S+ {2}200 timeout after 300 ms {2}\d+ ms/);
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${d!.id}\\s+attempting\\s+1 try\\s+timeout after 300 ms`));
    const logged = lines.filter((l) => l.msg === 'webhook attempt').map((l) => [l.status_code, l.error, l.outcome]);
    assert.deepEqual(logged, [[200, 'timeout after 300 ms', 'attempting']]);
  });

  test('a 200 whose body is cut short is a success, and the CLI says 200 (not the error beside it)', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.cutBody(200));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [d] = deliveriesOf(f.till);
    const stored = f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!;
    assert.equal(stored.status, 'success');
    assert.ok(stored.lastError, 'the cut is recorded');
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${d!.id}\\s+success\\s+1 try\\s+200\\s`));
    assert.doesNotMatch((await runTillBeside(f.till, ['deliveries', 'show', d!.id])).stdout, /last error/);
  });

  test('a dead letter set aside after a failed connection, replayed once enabled, says again what its last attempt met, not nothing', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.reset());
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [waiting] = deliveriesOf(f.till);
    const lastAttempt = f.till.rt.ctx.repos.webhookDeliveries.get(waiting!.id)!;
    assert.deepEqual([lastAttempt.status, lastAttempt.lastStatusCode], ['attempting', null]);
    assert.ok(lastAttempt.lastError, 'the reset is recorded');
    assert.equal((await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: false } })).status, 200);
    assert.equal(f.till.rt.ctx.repos.webhookDeliveries.get(waiting!.id)!.lastError, 'endpoint disabled');
    assert.equal((await runTillBeside(f.till, ['webhooks', 'enable', '--store', f.store.storeId, f.endpointId])).code, 0);
    const replay = await runTillBeside(f.till, ['--json', 'deliveries', 'replay', waiting!.id]);
    assert.equal(replay.code, 0, replay.stderr);
    const [replayed] = JSON.parse(replay.stdout).replayed;
    assert.deepEqual([replayed.status, replayed.last_error, replayed.last_status_code], ['attempting', lastAttempt.lastError, null]);
  });

  test('a retry waiting when its endpoint is disabled is a dead letter at once, saying why, and replayable once enabled; deleting does the same', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.status(500), answer.status(500));
    const inv = await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [waiting] = deliveriesOf(f.till);
    assert.equal(waiting!.status, 'attempting');
    const off = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: false } });
    assert.equal(off.status, 200);
    const held = f.till.rt.ctx.repos.webhookDeliveries.get(waiting!.id)!;
    assert.deepEqual([held.status, held.nextAttemptAt, held.lastError], ['dead_letter', null, 'endpoint disabled']);
    // The CLI's text says why, which its attempts (a 500) do not.
    assert.match((await runTillBeside(f.till, ['deliveries', 'show', held.id])).stdout, /last error: endpoint disabled/);
    // Each line names its event and invoice: deliveries are told apart without a `show` each.
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${held.id}\\s+dead_letter\\s+1 try\\s+endpoint disabled\\s+invoice\\.created\\s+${inv.id}\\s+http`));
    // Its JSON says why it is a dead letter, not that the receiver answered 500 last: that answer is in its attempts.
    const [listed] = JSON.parse((await runTillBeside(f.till, ['--json', 'deliveries', 'list', '--status', 'dead_letter'])).stdout);
    assert.deepEqual([listed.id, listed.last_error, listed.last_status_code, listed.response_body, listed.total_attempts], [held.id, 'endpoint disabled', null, null, 1]);
    const shown = JSON.parse((await runTillBeside(f.till, ['--json', 'deliveries', 'show', held.id])).stdout);
    assert.deepEqual([shown.last_status_code, shown.response_body], [null, null]);
    assert.deepEqual(shown.attempt_log.map((a: { status_code: number }) => a.status_code), [500]);
    assert.equal((await runTillBeside(f.till, ['webhooks', 'enable', '--store', f.store.storeId, f.endpointId])).code, 0);
    const replay = await runTillBeside(f.till, ['--json', 'deliveries', 'replay', held.id]);
    assert.equal(replay.code, 0, replay.stderr);
    assert.equal(deliveriesOf(f.till)[0]!.status, 'attempting');
    // Replayed, its endpoint enabled: no longer "endpoint disabled", but what the receiver last answered.
    const [replayed] = JSON.parse(replay.stdout).replayed;
    assert.deepEqual([replayed.last_error, replayed.last_status_code], [null, 500]);
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${held.id}\\s+attempting\\s+1 try\\s+500\\s`));
    f.till.clock.set(Date.now() + 60_000); // past the CLI's clock, which dated the replay
    await f.till.rt.webhooks.runOnce(); // a 500 again
    // Counted as `deliveries show` lists them: every attempt, those before the replay too.
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${held.id}\\s+attempting\\s+2 tries\\s+500`));
    assert.equal((await runTillBeside(f.till, ['webhooks', 'delete', '--store', f.store.storeId, f.endpointId])).code, 0);
    const orphan = f.till.rt.ctx.repos.webhookDeliveries.get(held.id)!;
    assert.deepEqual([orphan.status, orphan.lastError], ['dead_letter', 'endpoint deleted']);
  });

  test('an attempt on the wire when its endpoint is disabled is still recorded: delivered if the receiver took it, else a dead letter saying why', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    // The answer's body dribbles for ~600 ms: the endpoint is disabled between its request and its end.
    f.receiver.respondWith(answer.slowBody({ status: 200, chunks: 3, intervalMs: 200 }), answer.slowBody({ status: 500, chunks: 3, intervalMs: 200 }));
    const disableWhileOnTheWire = async (n: number, enable: boolean) => {
      if (enable) assert.equal((await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: true } })).status, 200);
      await createInvoice(f);
      const [waiting] = deliveriesOf(f.till).filter((d) => d.status === 'attempting');
      const running = f.till.rt.webhooks.runOnce();
      await f.receiver.waitForRequests(n, 5000);
      const off = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: false } });
      assert.equal(off.status, 200);
      await running;
      return f.till.rt.ctx.repos.webhookDeliveries.get(waiting!.id)!;
    };
    const took = await disableWhileOnTheWire(1, false);
    assert.deepEqual([took.status, took.totalAttempts, took.lastStatusCode, took.lastError], ['success', 1, 200, null]);
    assert.deepEqual(f.till.rt.ctx.repos.webhookDeliveries.attempts(took.id).map((a) => a.statusCode), [200]);
    const held = await disableWhileOnTheWire(2, true);
    assert.deepEqual([held.status, held.totalAttempts, held.lastStatusCode, held.lastError], ['dead_letter', 1, 500, 'endpoint disabled']);
    assert.deepEqual(f.till.rt.ctx.repos.webhookDeliveries.attempts(held.id).map((a) => a.statusCode), [500]);
    // Its attempt counts in the list as in `deliveries show` (the cycle's count, 0, is no replay's).
    assert.match((await runTillBeside(f.till, ['deliveries', 'list'])).stdout, new RegExp(`${held.id}\\s+dead_letter\\s+1 try\\s+endpoint disabled`));
  });

  test('an endpoint disabled through the CLI gets nothing more once the secrets read for sending are older than their hold time', async (t) => {
    const f = await startWebhookFixture(t);
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    assert.equal((await f.receiver.waitForRequests(1, 5000)).length, 1);
    // Its delivery exists before the endpoint is disabled.
    await createInvoice(f);
    const r = await runTillBeside(f.till, ['webhooks', 'disable', '--store', f.store.storeId, f.endpointId]);
    assert.equal(r.code, 0, r.stderr);
    f.till.clock.advance(SENDING_SECRETS_TTL_MS);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 1, 'the second event was not sent to the disabled endpoint');
    // Set aside, not failed (spec 3.2: failed is a receiver's 4xx): replayable once the endpoint is enabled again.
    const held = deliveriesOf(f.till).find((d) => d.status !== 'success')!;
    assert.equal(held.status, 'dead_letter');
    const refused = await runTillBeside(f.till, ['deliveries', 'replay', held.id]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is disabled: enable it \(till webhooks enable/);
    const all = await runTillBeside(f.till, ['--json', 'deliveries', 'replay', '--all-dead']);
    assert.deepEqual(JSON.parse(all.stdout), { replayed: [], left_dead_letters: 1 }, 'replay --all-dead leaves a disabled endpoint\'s dead letters alone, and counts them');
    // and says so, not just "replaying 0".
    assert.match((await runTillBeside(f.till, ['deliveries', 'replay', '--all-dead'])).stdout, /^replaying 0 deliveries; 1 dead letter of a disabled or deleted endpoint left as it is \(a disabled endpoint's: enable it, then replay; a deleted one's cannot be replayed\)$/m);
    assert.equal((await runTillBeside(f.till, ['webhooks', 'enable', '--store', f.store.storeId, f.endpointId])).code, 0);
    assert.equal((await runTillBeside(f.till, ['deliveries', 'replay', held.id])).code, 0);
    // The CLI dates the replay by the system clock, which has run ahead of the test's.
    f.till.clock.set(Math.max(f.till.clock.now(), Date.now()) + SENDING_SECRETS_TTL_MS);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 2);
    assert.deepEqual(deliveriesOf(f.till).map((d) => d.status), ['success', 'success']);
    // Deleted: its dead letters can never be replayed (410 gone).
    await createInvoice(f);
    assert.equal((await runTillBeside(f.till, ['webhooks', 'delete', '--store', f.store.storeId, f.endpointId])).code, 0);
    f.till.clock.advance(SENDING_SECRETS_TTL_MS);
    await f.till.rt.webhooks.runOnce();
    const orphan = deliveriesOf(f.till).find((d) => d.status !== 'success')!;
    assert.equal(orphan.status, 'dead_letter');
    const gone = await runTillBeside(f.till, ['deliveries', 'replay', orphan.id]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /which was deleted; it cannot be replayed/);
  });

  test("an endpoint's new URL takes its waiting retries and the replays of its dead letters; delivered ones keep theirs", async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    // The old path is down; any other answers.
    f.receiver.respondWith((req) => (req.url === '/hooks' ? answer.status(503, 'gone') : answer.status(200)));
    const moveTo = async (path: string) => {
      const res = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { url: `${f.receiver.url}${path}` } });
      assert.equal(res.status, 200, res.text);
    };
    const urlOf = (id: string) => f.till.rt.ctx.repos.webhookDeliveries.get(id)!.url;

    // A retry waiting when the URL changes goes to the new one.
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [waiting] = deliveriesOf(f.till);
    assert.equal(waiting!.status, 'attempting');
    await moveTo('/moved');
    assert.equal(urlOf(waiting!.id), `${f.receiver.url}/moved`, 'what is shown is where it goes');
    f.till.clock.advance(RETRY_DELAYS_MS[0]!);
    await f.till.rt.webhooks.runOnce();
    assert.deepEqual(f.receiver.requests.map((r) => r.url), ['/hooks', '/moved']);
    assert.equal(deliveriesOf(f.till)[0]!.status, 'success');

    // A dead letter, replayed after the fix, goes to the fixed URL; the delivered one keeps the URL it went to.
    await moveTo('/hooks');
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    for (const delay of RETRY_DELAYS_MS) {
      f.till.clock.advance(delay);
      await f.till.rt.webhooks.runOnce();
    }
    const dead = deliveriesOf(f.till)[1]!;
    assert.equal(dead.status, 'dead_letter');
    await moveTo('/fixed');
    assert.equal(urlOf(waiting!.id), `${f.receiver.url}/moved`);
    const r = await runTillBeside(f.till, ['deliveries', 'replay', dead.id]);
    assert.equal(r.code, 0, r.stderr);
    // The CLI's replay is due at its own (real) time: move the till's clock past it.
    f.till.clock.advance(7 * 24 * 3600_000);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.at(-1)!.url, '/fixed');
    assert.equal(f.receiver.requests.filter((req) => req.url === '/hooks').length, 1 + 7);
    assert.equal(deliveriesOf(f.till)[1]!.status, 'success');
  });

  test('deliveries read ahead while the endpoint was busy go to the URL it has when they start', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 500 });
    // The first 16 (the per-endpoint bound) hang until the timeout; the rest wait in memory, read ahead.
    f.receiver.respondWith((req) => (req.url === '/hooks' ? answer.hang() : answer.status(200)));
    for (let i = 0; i < 20; i++) await createInvoice(f);
    const first = f.till.rt.webhooks.runOnce();
    await f.receiver.waitForRequests(16, 5000);
    const res = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { url: `${f.receiver.url}/moved` } });
    assert.equal(res.status, 200, res.text);
    await first;
    const all = await f.receiver.waitForRequests(20, 5000);
    assert.deepEqual(all.slice(16).map((r) => r.url), ['/moved', '/moved', '/moved', '/moved']);
  });

  test('an outcome that cannot be committed (another process holds the lock past the busy timeout) is committed later; nothing is sent meanwhile', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startWebhookFixture(t, { events: ['invoice.created'], env: { TILL_BUSY_TIMEOUT_MS: '100' }, logger });
    f.receiver.respondWith(() => answer.status(500, 'down'));
    await createInvoice(f);
    await createInvoice(f);
    f.till.rt.ctx.db.prepare("UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at + 10000 WHERE id = (SELECT MAX(id) FROM webhook_deliveries)").run();
    const [first, later] = deliveriesOf(f.till);
    const lock = holdWriteLock(t, databasePath(f.till.config.dataDir));
    const attempted = f.till.rt.webhooks.runOnce();
    await f.receiver.waitForRequests(1, 5000);
    const failed = () => lines.filter((l) => l.msg.startsWith('could not record a webhook outcome'));
    for (let i = 0; i < 200 && failed().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(failed()[0]?.delivery_id, first!.id, 'the commit failed past the busy timeout');
    // Pumps and the later delivery's due time come and go (the first's retry is not due for a minute).
    f.till.clock.advance(10_000);
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 50));
      await f.till.rt.webhooks.pump();
    }
    assert.equal(f.receiver.requests.length, 1, 'nothing was sent again, nor anything new, while the outcome could not be recorded');
    lock.release();
    await attempted;
    const d = f.till.rt.ctx.repos.webhookDeliveries.get(first!.id)!;
    assert.equal(d.attempts, 1);
    assert.equal(d.lastStatusCode, 500);
    assert.equal(d.nextAttemptAt, d.lastAttemptAt! + RETRY_DELAYS_MS[0]!, 'the schedule counts from the attempt that was made');
    await f.receiver.waitForRequests(2, 5000);
    assert.equal(f.receiver.requests[1]!.headers['x-service-event-id'], f.till.rt.ctx.repos.webhookDeliveries.get(later!.id)!.eventId, 'sending resumed once it was recorded');
  });

  test('stopping gives up an outcome that cannot be committed: the delivery stays due, to be made again after the restart', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startWebhookFixture(t, { events: ['invoice.created'], env: { TILL_BUSY_TIMEOUT_MS: '100' }, logger });
    await createInvoice(f);
    const lock = holdWriteLock(t, databasePath(f.till.config.dataDir));
    const attempted = f.till.rt.webhooks.runOnce();
    await f.receiver.waitForRequests(1, 5000);
    for (let i = 0; i < 200 && !lines.some((l) => l.msg.startsWith('could not record a webhook outcome')); i++) await new Promise((r) => setTimeout(r, 10));
    await f.till.rt.webhooks.stop();
    await attempted;
    assert.ok(lines.some((l) => l.msg.startsWith('webhook outcome not recorded before stopping')));
    lock.release();
    const [d] = deliveriesOf(f.till);
    assert.equal(d!.status, 'attempting');
    assert.equal(d!.attempts, 0);
    assert.ok(d!.next_attempt_at! <= f.till.clock.now(), 'still due');
  });

  test('the whole retry schedule: 1m, 5m, 30m, 2h, 12h, 24h, then dead_letter; each attempt signed afresh', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(() => answer.status(503, 'busy'));
    // What a monitor of /healthz sees of the deliveries not delivered (status stays ok: the receiver is not Till).
    const undelivered = async () => {
      const health = await call(f.till, 'GET', '/healthz');
      assert.equal(health.body.status, 'ok');
      return health.body.webhooks;
    };
    assert.deepEqual(await undelivered(), { attempting: 0, failed_last_day: 0, dead_letters_last_day: 0 });
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 1);
    assert.deepEqual(await undelivered(), { attempting: 1, failed_last_day: 0, dead_letters_last_day: 0 }, 'waiting for its retry');
    for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
      f.till.clock.advance(delay - 1000);
      await f.till.rt.webhooks.runOnce();
      assert.equal(f.receiver.requests.length, i + 1, `attempt ${i + 2} is not sent a second early`);
      f.till.clock.advance(1000);
      await f.till.rt.webhooks.runOnce();
      assert.equal(f.receiver.requests.length, i + 2, `attempt ${i + 2} is sent after ${delay / 1000} s`);
    }
    const ts = f.receiver.requests.map((r) => Number(/t=(\d+)/.exec(String(r.headers['x-service-signature']))![1]));
    assert.equal(new Set(ts).size, 7, 'every attempt has its own t');
    for (const r of f.receiver.requests) {
      assert.equal(verifyWebhook(r.rawBody, String(r.headers['x-service-signature']), [f.secret], { now: r.receivedAt }).ok, true);
    }
    const [d] = deliveriesOf(f.till);
    assert.equal(d!.status, 'dead_letter');
    assert.equal(d!.attempts, 7);
    assert.deepEqual(await undelivered(), { attempting: 0, failed_last_day: 0, dead_letters_last_day: 1 });
    f.till.clock.advance(7 * 24 * 3600_000);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 7, 'nothing more after dead_letter');

    // Replay through the real CLI on the same data dir, as an admin would.
    const r = await runTillBeside(f.till, ['deliveries', 'replay', '--all-dead']);
    assert.equal(r.code, 0, r.stderr);
    f.receiver.respondWith(answer.status(200, 'thanks'));
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 8);
    assert.equal(f.receiver.requests[7]!.body, f.receiver.requests[0]!.body, 'a replay sends the same event and body');
    const after = f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!;
    assert.equal(after.status, 'success');
    assert.equal(after.responseBody, 'thanks');
    assert.equal(after.totalAttempts, 8);
    assert.deepEqual(await undelivered(), { attempting: 0, failed_last_day: 0, dead_letters_last_day: 0 });
  });

  for (const status of [400, 404, 410]) {
    test(`a ${status} is a permanent failure: no retry`, async (t) => {
      const f = await startWebhookFixture(t, { events: ['invoice.created'] });
      f.receiver.respondWith(answer.status(status, 'nope'));
      await createInvoice(f);
      await f.till.rt.webhooks.runOnce();
      assert.deepEqual((await call(f.till, 'GET', '/healthz')).body.webhooks, { attempting: 0, failed_last_day: 1, dead_letters_last_day: 0 });
      f.till.clock.advance(48 * 3600_000);
      await f.till.rt.webhooks.runOnce();
      assert.equal(f.receiver.requests.length, 1);
      const [d] = deliveriesOf(f.till);
      assert.equal(d!.status, 'failed');
      assert.equal(f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!.lastStatusCode, status);
    });
  }

  test('the first 4 KiB of the answer are kept; the rest is read and dropped', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    const long = 'a'.repeat(4096) + 'b'.repeat(6000);
    f.receiver.respondWith(answer.status(200, long));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const [d] = deliveriesOf(f.till);
    const stored = f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!;
    assert.equal(stored.status, 'success');
    assert.equal(stored.responseBody, 'a'.repeat(4096));
    assert.equal(f.till.rt.ctx.repos.webhookDeliveries.attempts(d!.id)[0]!.responseBody, 'a'.repeat(4096));
  });

  test('a multi-byte character cut in two at 4 KiB is left out of the kept answer, not replaced by U+FFFD', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(answer.status(200, '€'.repeat(2000))); // 3 bytes each: byte 4096 falls inside one
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const stored = f.till.rt.ctx.repos.webhookDeliveries.get(deliveriesOf(f.till)[0]!.id)!;
    assert.equal(stored.responseBody, '€'.repeat(1365));
  });

  test('three endpoints on one host, 16 attempts due for each: at most 32 go to the host at once, and every one answered in time is a success', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 2000 });
    await addEndpointsOnReceiver(f, ['/second', '/third']);
    // Each answer takes 1,200 ms of the 2,000 ms deadline: an attempt that waited for a socket behind another would miss it.
    let open = 0;
    let most = 0;
    f.receiver.respondWith(() => {
      most = Math.max(most, ++open);
      setTimeout(() => open--, 1200);
      return answer.slowBody({ status: 200, chunk: 'ok', chunks: 1, intervalMs: 1200 });
    });
    for (let i = 0; i < 16; i++) await createInvoice(f);
    f.till.rt.webhooks.start(50);
    await f.receiver.waitForRequests(48, 10_000);
    await f.till.rt.webhooks.stop();
    assert.equal(most, 32, 'the host\'s bound: 32 at once, the rest waiting in the worker');
    const deliveries = deliveriesOf(f.till);
    assert.equal(deliveries.length, 48);
    assert.deepEqual(deliveries.filter((d) => d.status !== 'success').map((d) => d.status), []);
  });

  test('two hanging endpoints filling their host\'s bound: a healthy endpoint on that host gets the slots they free, before their backlog', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 2000 });
    await addEndpointsOnReceiver(f, ['/hang-a', '/hang-b']);
    f.receiver.respondWith((req) => (req.url.startsWith('/hang') ? answer.hang() : answer.status(200)));
    for (let i = 0; i < 40; i++) await createInvoice(f);
    f.till.rt.webhooks.start(50);
    const healthy = () => f.receiver.requests.filter((r) => !r.url.startsWith('/hang')).length;
    await waitFor(() => healthy() >= 40, 'every event at the healthy endpoint', 30_000);
    const hanging = f.receiver.requests.length - healthy();
    await f.till.rt.webhooks.stop();
    // The hanging two fill the host's 32 slots at once. Once they time out (2 s), the healthy endpoint, waiting with
    // no attempt there, is first in line for a slot they free, and keeps the one it cycles: it is served within that
    // round, not after all 80 of their first attempts.
    assert.ok(hanging < 64, `hanging attempts made before the healthy endpoint had all 40: ${hanging}`);
  });

  test('an endpoint disabled while deliveries wait in the worker\'s read-ahead: those are set aside unsent, with no attempt recorded', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 500 });
    f.receiver.respondWith(() => answer.hang());
    for (let i = 0; i < 40; i++) await createInvoice(f);
    f.till.rt.webhooks.start(50);
    // 16 on the wire (the endpoint's bound), the rest read ahead behind them.
    await f.receiver.waitForRequests(16, 5_000);
    const off = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}`, { key: f.store.key, body: { enabled: false } });
    assert.equal(off.status, 200, off.text);
    // The 16 time out and are recorded; the worker then starts what it had read ahead, which finds the endpoint disabled.
    await waitFor(() => f.till.rt.ctx.db.prepare('SELECT COUNT(*) n FROM webhook_attempts').get() as { n: number }, 'the attempts on the wire recorded');
    await new Promise((r) => setTimeout(r, 1000));
    await f.till.rt.webhooks.stop();
    const sent = f.receiver.requests.length;
    const recorded = f.till.rt.ctx.db.prepare('SELECT COUNT(*) n, SUM(error = \'endpoint disabled or deleted\') unsent FROM webhook_attempts').get() as { n: number; unsent: number };
    assert.deepEqual([recorded.n, recorded.unsent], [sent, 0], 'one attempt recorded per request the receiver got');
    const counted = f.till.rt.ctx.db.prepare('SELECT SUM(total_attempts) n FROM webhook_deliveries').get() as { n: number };
    assert.equal(counted.n, sent);
    assert.deepEqual(deliveriesOf(f.till).filter((d) => d.status !== 'dead_letter').map((d) => d.status), []);
  });

  for (const status of [200, 201, 204]) {
    test(`a ${status} is success`, async (t) => {
      const f = await startWebhookFixture(t, { events: ['invoice.created'] });
      f.receiver.respondWith(answer.status(status));
      await createInvoice(f);
      await f.till.rt.webhooks.runOnce();
      assert.equal(deliveriesOf(f.till)[0]!.status, 'success');
    });
  }

  const retryable: Array<[string, ReturnType<typeof answer.status>]> = [
    ['500', answer.status(500)],
    ['a hang past the timeout', answer.hang()],
    ['a 200 whose body is still coming at the timeout', answer.slowBody({ chunks: 20, intervalMs: 100 })],
    ['a connection reset', answer.reset()],
    ['a redirect (not followed)', answer.redirect('http://127.0.0.1:1/elsewhere')],
  ];
  for (const [name, a] of retryable) {
    test(`${name} is retried after 1 minute`, async (t) => {
      const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 500 });
      f.receiver.respondWith(a, answer.status(200));
      await createInvoice(f);
      await f.till.rt.webhooks.runOnce();
      const [d] = deliveriesOf(f.till);
      assert.equal(d!.status, 'attempting');
      assert.equal(d!.next_attempt_at, f.till.clock.now() + 60_000 - (f.till.clock.now() - (f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!.lastAttemptAt ?? 0)));
      f.till.clock.advance(60_000);
      await f.till.rt.webhooks.runOnce();
      assert.equal(deliveriesOf(f.till)[0]!.status, 'success');
      assert.equal(f.receiver.requests.length, 2, 'the redirect target was never called');
    });
  }

  test('rotation: two v1 signatures for 24 h, then only the new one', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    const rot = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/rotate-secret`, { key: f.store.key });
    assert.equal(rot.status, 200);
    assert.notEqual(rot.body.secret, f.secret);
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const first = f.receiver.requests[0]!;
    const sig = String(first.headers['x-service-signature']);
    assert.equal(sig.match(/v1=/g)!.length, 2);
    for (const secret of [f.secret, rot.body.secret]) {
      assert.equal(verifyWebhook(first.rawBody, sig, [secret], { now: f.till.clock.now() }).ok, true);
    }
    f.till.clock.advance(24 * 3600_000 + 1);
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    const second = String(f.receiver.requests[1]!.headers['x-service-signature']);
    assert.equal(second.match(/v1=/g)!.length, 1);
    assert.equal(verifyWebhook(f.receiver.requests[1]!.rawBody, second, [f.secret], { now: f.till.clock.now() }).ok, false);
  });

  test('a secret sealed under a lost secret.key: attempts fail on the schedule, sending nothing; one rotation makes the endpoint work again', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    // What a data dir restored without its secret.key holds: a secret sealed under another key.
    const lostKey = openSecretBox(tempDir(t));
    f.till.rt.ctx.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(lostKey.seal('whsec_lost'), f.endpointId);
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 0);
    const [d] = deliveriesOf(f.till);
    assert.equal(d!.status, 'attempting');
    assert.equal(d!.attempts, 1, 'the attempt is counted: the schedule leads to dead_letter, not a loop');
    assert.equal(f.till.rt.ctx.repos.webhookDeliveries.get(d!.id)!.lastError, UNREADABLE_SECRET);
    // A till started on this data dir says so at once, naming the endpoint and the way out.
    const started = capturedLogger('warn');
    const beside = createRuntime(loadConfig({ env: { TILL_DATA_DIR: f.till.config.dataDir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000' } }), { clock: f.till.clock, logger: started.logger });
    await beside.stop();
    assert.deepEqual(started.lines.map((l) => [l.msg, l.secrets]), [
      ['1 webhook signing secret(s) cannot be opened with secret.key: deliveries they sign fail until they are replaced (till webhooks rotate --unreadable)', [f.endpointId]],
    ]);

    const rot = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks/${f.endpointId}/rotate-secret`, { key: f.store.key });
    assert.equal(rot.status, 200);
    assert.equal(rot.body.previous_secret_expires_at, null, 'an unreadable secret is not kept as the previous one');
    f.till.clock.advance(RETRY_DELAYS_MS[0]!);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 1);
    const sig = String(f.receiver.requests[0]!.headers['x-service-signature']);
    assert.equal(sig.match(/v1=/g)!.length, 1);
    assert.equal(verifyWebhook(f.receiver.requests[0]!.rawBody, sig, [rot.body.secret], { now: f.till.clock.now() }).ok, true);
    assert.equal(deliveriesOf(f.till)[0]!.status, 'success');
  });

  test('a restart in the middle of the schedule resumes it from the database', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith(() => answer.status(500));
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    f.till.clock.advance(60_000);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 2);
    // Stop this Till and start another on the same data dir, as a restart does.
    await f.till.rt.stop();
    const rt2 = createRuntime(loadConfig({ env: { TILL_DATA_DIR: f.till.config.dataDir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', TILL_ALLOW_PRIVATE_CALLBACKS: 'true' } }), { clock: f.till.clock, logger: silentLogger });
    t.after(() => rt2.stop());
    f.till.clock.advance(5 * 60_000 - 1000);
    await rt2.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 2, 'not before the 5-minute retry is due');
    f.till.clock.advance(1000);
    f.receiver.respondWith(answer.status(200));
    await rt2.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 3);
    assert.equal(rt2.ctx.repos.webhookDeliveries.list({ limit: 10 })[0]!.status, 'success');
  });

  test('private addresses are refused unless the operator allows them: given as a receiver, and at connect time', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    // The operator turns private receivers off: the endpoint made before is refused when Till connects.
    f.till.rt.ctx.config.allowPrivateCallbacks = false;
    await createInvoice(f);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, 0);
    const d = f.till.rt.ctx.repos.webhookDeliveries.get(deliveriesOf(f.till)[0]!.id)!;
    assert.equal(d.status, 'attempting');
    assert.match(d.lastError!, /private address/);
    // One plainly private (an address literal, localhost) is refused when it is given.
    const hooks = `/v1/stores/${f.store.storeId}/webhooks`;
    for (const url of ['http://127.0.0.1:9/x', 'http://[::1]/x', 'https://localhost/x', 'http://10.1.2.3/x', 'http://shop.localhost/x']) {
      for (const res of [
        await call(f.till, 'POST', hooks, { key: f.store.key, body: { url } }),
        await call(f.till, 'POST', `${hooks}/${f.endpointId}`, { key: f.store.key, body: { url } }),
        await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000, callback_url: url } }),
      ]) {
        assert.equal(res.status, 400, `${url}: ${res.text}`);
        assert.match(res.body.error.message, /a private address, where Till does not deliver unless webhooks.allow_private is set/);
      }
    }
    assert.equal((await call(f.till, 'POST', hooks, { key: f.store.key, body: { url: 'https://8.8.8.8/x' } })).status, 201, 'a public address literal is fine');
  });

  test('a slow endpoint does not hold up another one, nor its own later events', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 3000 });
    f.receiver.respondWith(() => answer.hang());
    const fast = await (await import('../../fakes/webhook-receiver.ts')).startWebhookReceiver({ clock: f.till.clock });
    t.after(() => fast.close());
    const ep = await call(f.till, 'POST', `/v1/stores/${f.store.storeId}/webhooks`, { key: f.store.key, body: { url: fast.url, enabled_events: ['invoice.cancelled'] } });
    assert.equal(ep.status, 201);
    const { createInvoice: createViaService } = await import('../../../src/services/invoices.ts');
    const { parseInvoiceRequest } = await import('../../../src/domain/invoice-request.ts');
    const { authenticateApiKey } = await import('../../../src/services/api-keys.ts');
    const caller = authenticateApiKey(f.till.rt.ctx, `Bearer ${f.store.key}`);
    await Promise.all(Array.from({ length: 1000 }, () =>
      createViaService(f.till.rt.ctx, { caller, idempotencyKey: null, requestHash: 'x', parse: () => parseInvoiceRequest({ amount_sats: 1000 }) })));
    f.till.rt.webhooks.start(50);
    const inv = await createInvoice(f);
    await call(f.till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: f.store.key });
    const started = Date.now();
    await fast.waitForRequests(1, 2000);
    assert.ok(Date.now() - started < 2000);
    assert.equal(JSON.parse(fast.requests[0]!.body).event_type, 'invoice.cancelled');
    assert.ok(f.receiver.requests.length > 1, 'the slow endpoint gets several events at once');
    assert.ok(f.receiver.requests.length <= 16, `at most 16 in flight to one endpoint, saw ${f.receiver.requests.length}`);
    await f.till.rt.webhooks.stop();
  });

  test('new events reach an endpoint with an attempt under way at once, before and after another answer, without the timer', async (t) => {
    // The worker skips targets whose due deliveries are all under way, and after an answer reads no more rows when its
    // last read found them all: each new event must still wake it into reading the new one.
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 3000 });
    f.receiver.respondWith(answer.hang());
    f.till.rt.webhooks.start(3_600_000);
    const first = await createInvoice(f);
    await f.receiver.waitForRequests(1, 2000);
    const second = await createInvoice(f);
    await f.receiver.waitForRequests(2, 2000);
    const secondDelivered = () => deliveriesOf(f.till).filter((d) => d.status === 'success').length === 1;
    await waitFor(secondDelivered, 'the second delivery recorded while the first hangs');
    const third = await createInvoice(f);
    await f.receiver.waitForRequests(3, 2000);
    const invoiceOf = (body: string) => (JSON.parse(body) as { data: { invoice: { id: string } } }).data.invoice.id;
    assert.deepEqual(f.receiver.requests.map((r) => invoiceOf(r.body)), [first.id, second.id, third.id]);
    await f.till.rt.webhooks.stop();
  });

  for (const { maxPerTarget, underWay, why } of [
    { maxPerTarget: 2, underWay: 2, why: 'no room for it' },
    { maxPerTarget: 4, underWay: 3, why: 'more than half its bound busy' },
  ]) {
    test(`a new event for an endpoint with ${why} goes out as soon as an attempt answers, without the timer`, async (t) => {
      // Its pump cannot read the new row then; the endpoint's last read had found every row (nothing more to read
      // on an answer): the pump must leave the read to the next answer.
      const f = await startWebhookFixture(t, { events: ['invoice.created'] });
      f.receiver.respondWith(() => answer.slowBody({ status: 200, chunk: 'ok', chunks: 1, intervalMs: 300 }));
      const { DeliveryWorker } = await import('../../../src/webhooks/delivery-worker.ts');
      const worker = new DeliveryWorker(f.till.rt.ctx, silentLogger, { maxPerTarget, timeoutMs: 5000 });
      worker.start(3_600_000);
      t.after(() => worker.stop());
      for (let i = 1; i <= underWay; i++) {
        await createInvoice(f);
        await f.receiver.waitForRequests(i, 2000);
      }
      await createInvoice(f);
      await f.receiver.waitForRequests(underWay + 1, 3000);
      await worker.stop();
    });
  }

  test('a pump due when the worker stops sends nothing, nor does deliverNow after: stopped means nothing more goes out', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    const { DeliveryWorker } = await import('../../../src/webhooks/delivery-worker.ts');
    const worker = new DeliveryWorker(f.till.rt.ctx, silentLogger, { timeoutMs: 5000 });
    await createInvoice(f);
    worker.start(3_600_000); // pumps soon (its first wake), not at once
    await worker.stop();
    // Nor does the endpoint test call's start once stopped (a request still running as the server stops).
    await worker.deliverNow(deliveriesOf(f.till)[0]!.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(f.receiver.requests.length, 0);
    assert.deepEqual(deliveriesOf(f.till).map((d) => [d.status, d.attempts]), [['attempting', 0]]);
  });

  test('the endpoint test call sends its delivery once, even when a pump read it ahead before the call started it', async (t) => {
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    f.receiver.respondWith((req) => (req.headers['x-service-event-type'] === 'webhook.test' ? answer.status(200) : answer.hang()));
    const { DeliveryWorker } = await import('../../../src/webhooks/delivery-worker.ts');
    const { queueTestDelivery } = await import('../../../src/services/webhooks.ts');
    const { runRequestedWrite } = await import('../../../src/services/disk.ts');
    const worker = new DeliveryWorker(f.till.rt.ctx, silentLogger, { maxPerTarget: 2, timeoutMs: 1000 });
    t.after(() => worker.stop());
    await createInvoice(f);
    await worker.pump(); // its invoice.created hangs
    f.till.clock.advance(1);
    await createInvoice(f);
    f.till.clock.advance(1);
    // The route commits the test delivery, then starts it; a pump in between (the timer, another event's, during
    // the commit's fdatasync) reads it ahead, behind the second invoice.created, which takes the last slot.
    const id = await runRequestedWrite(f.till.rt.ctx, () => queueTestDelivery(f.till.rt.ctx, f.store.storeId, f.endpointId));
    await worker.pump();
    await worker.deliverNow(id);
    // The hanging attempts time out; their answers start what is read ahead.
    await waitFor(() => deliveriesOf(f.till).filter((d) => d.id !== id && d.attempts > 0).length === 2, 'both invoice.created attempts timed out and recorded');
    const tests = () => f.receiver.requests.filter((r) => r.headers['x-service-event-type'] === 'webhook.test');
    await waitFor(() => tests().length > 1, 'a second test request', 500).catch(() => {});
    assert.equal(tests().length, 1);
    assert.equal(f.till.rt.ctx.repos.webhookDeliveries.attempts(id).length, 1, 'its one attempt recorded');
  });

  test('small bounds, four receivers on one host answering at random speeds, events in bursts: every delivery sent once, none left behind, without the timer', async (t) => {
    // Tight bounds make every path of the worker run: read-ahead, targets waiting for the host's slots, the overall
    // bound, answers that read no more rows (their last read found them all), pumps of only the targets given new
    // deliveries. Without the 1 s timer, a delivery none of them picks up stays behind and the test fails.
    const f = await startWebhookFixture(t, { events: ['invoice.created'], webhookTimeoutMs: 5000 });
    await addEndpointsOnReceiver(f, ['/second', '/third']);
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    f.receiver.respondWith(() => (random() < 0.5 ? answer.status(200) : answer.slowBody({ status: 200, chunk: 'ok', chunks: 1, intervalMs: Math.floor(random() * 40) })));
    const { DeliveryWorker } = await import('../../../src/webhooks/delivery-worker.ts');
    const worker = new DeliveryWorker(f.till.rt.ctx, silentLogger, { maxInFlight: 5, maxPerTarget: 2, maxPerOrigin: 3, timeoutMs: 5000 });
    worker.start(3_600_000);
    t.after(() => worker.stop());
    const bursts = 6;
    const perBurst = 15;
    for (let b = 0; b < bursts; b++) {
      await Promise.all(Array.from({ length: perBurst }, () => createInvoice(f, { amount_sats: 1000, callback_url: `${f.receiver.url}/callback` })));
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 60)));
    }
    const expected = bursts * perBurst * 4;
    await f.receiver.waitForRequests(expected, 30_000);
    await waitFor(() => deliveriesOf(f.till).every((d) => d.status === 'success'), 'every outcome recorded');
    await worker.stop();
    const sent = f.receiver.requests.map((r) => `${r.headers['x-service-event-id']} ${r.url}`);
    assert.equal(sent.length, expected, 'no delivery sent twice');
    assert.equal(new Set(sent).size, expected);
    assert.equal(deliveriesOf(f.till).length, expected);
  });

  test('a backlog to a busy endpoint: each event sent once, every outcome recorded', async (t) => {
    // Answered attempts free their slot before their outcome commits; they must not be picked again meanwhile.
    const f = await startWebhookFixture(t, { events: ['invoice.created'] });
    const { createInvoice: createViaService } = await import('../../../src/services/invoices.ts');
    const { parseInvoiceRequest } = await import('../../../src/domain/invoice-request.ts');
    const { authenticateApiKey } = await import('../../../src/services/api-keys.ts');
    const caller = authenticateApiKey(f.till.rt.ctx, `Bearer ${f.store.key}`);
    const created = await Promise.all(Array.from({ length: 300 }, () =>
      createViaService(f.till.rt.ctx, { caller, idempotencyKey: null, requestHash: 'x', parse: () => parseInvoiceRequest({ amount_sats: 1000 }) })));
    f.till.rt.webhooks.start(50);
    await f.receiver.waitForRequests(300, 10_000);
    await f.till.rt.webhooks.stop();
    const eventIds = f.receiver.requests.map((r) => r.headers['x-service-event-id']);
    assert.equal(eventIds.length, 300, 'no event was sent twice');
    assert.equal(new Set(eventIds).size, 300);
    const sent = new Set(created.map((c) => f.till.rt.ctx.repos.events.listForInvoice(c.invoice!.id)[0]!.id));
    assert.deepEqual(new Set(eventIds), sent);
    const deliveries = deliveriesOf(f.till);
    assert.equal(deliveries.length, 300);
    assert.ok(deliveries.every((d) => d.status === 'success' && d.attempts === 1), 'every answer is recorded once stop() returns');
  });
});
