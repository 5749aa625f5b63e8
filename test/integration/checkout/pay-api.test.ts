import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { describe, test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { createApp } from '../../../src/http/app.ts';
import { listen, WS_CLOSE_TIMEOUT_MS, WS_MAX_PAYLOAD_BYTES } from '../../../src/http/server.ts';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { updateStore } from '../../../src/services/stores.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { failSyncDuring, heldSync } from '../../helpers/held-sync.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestTill } from '../../helpers/till-server.ts';
import { createInvoice, openEvents, openSocket, simulate, within } from './checkout-helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
const MISSING_ID = 'inv_00000000000000000000000000';

/** Another process renames a table under the running server: every read of it fails until it is renamed back. */
function renameTable(till: TestTill, from: string, to: string): void {
  const other = new Database(databasePath(till.config.dataDir));
  try {
    other.pragma('busy_timeout = 5000');
    other.exec(`ALTER TABLE ${from} RENAME TO ${to}`);
  } finally {
    other.close();
  }
}

describe('GET /pay/invoices/:id', () => {
  for (const transport of TRANSPORTS) {
    test(`returns the invoice without metadata or callback_url, with store branding (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      updateStore(till.rt.ctx, store.storeId, { name: 'Corner Café', logoUrl: 'https://shop.example/logo.png', brandColor: '#1a2b3c' });
      const created = await createInvoice(till, store, {
        amount: '12.50',
        currency: 'USD',
        metadata: { order_id: 'A-1001', customer_email: 'buyer@example.com' },
        callback_url: 'https://shop.example/hooks/till',
      });

      const res = await call(till, 'GET', `/pay/invoices/${created.id}`);

      assert.equal(res.status, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.ok(res.headers.get('x-request-id'));
      assert.ok(!('metadata' in res.body), 'metadata is private to the merchant');
      assert.ok(!('callback_url' in res.body), 'callback_url is private to the merchant');
      assert.doesNotMatch(res.text, /A-1001|buyer@example\.com|hooks\/till/);
      const { metadata: _m, callback_url: _c, ...publicFields } = created;
      for (const [k, v] of Object.entries(publicFields)) assert.deepEqual(res.body[k], v, `field ${k}`);
      assert.deepEqual(res.body.store, { id: store.storeId, name: 'Corner Café', logo_url: 'https://shop.example/logo.png', brand_color: '#1a2b3c' });
      assert.equal(res.body.server_time, new Date(till.clock.now()).toISOString());
      assert.equal(res.body.amount, '12.50');
      assert.equal(res.body.currency, 'USD');
    });
  }
});

describe('the snapshot says when it is final', () => {
  test('nothing left to wait for: paid, cancelled, and expired only once its late window is over', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const finalOf = async (id: string) => (await call(till, 'GET', `/pay/invoices/${id}`)).body.final;
    const [pending, paid, cancelled, expired] = await Promise.all([1, 2, 3, 4].map(() => createInvoice(till, store)));
    await simulate(till, store, paid!.id, 'paid');
    assert.equal((await call(till, 'POST', `/v1/invoices/${cancelled!.id}/cancel`, { key: store.key })).status, 200);
    await simulate(till, store, expired!.id, 'expired');
    await simulate(till, store, expired!.id, 'payment_detected');
    assert.deepEqual(await Promise.all([pending, paid, cancelled, expired].map((inv) => finalOf(inv!.id))), [false, true, true, false]);
    // The late window (7 days) closes by the clock alone: a snapshot cached before it must not say otherwise.
    till.clock.advance(7 * DAY_MS + 1000);
    assert.equal(await finalOf(expired!.id), true, 'its unconfirmed late payment can no longer pay it');
  });
});

describe('CORS on every /pay/ response', () => {
  const cases: Array<{ name: string; method: string; path: (id: string) => string; status: number; code?: string }> = [
    { name: 'snapshot', method: 'GET', path: (id) => `/pay/invoices/${id}`, status: 200 },
    { name: 'unknown invoice', method: 'GET', path: () => `/pay/invoices/${MISSING_ID}`, status: 404, code: 'not_found' },
    { name: 'malformed id', method: 'GET', path: () => '/pay/invoices/not-an-id', status: 404, code: 'not_found' },
    { name: 'malformed escape', method: 'GET', path: () => '/pay/invoices/%zz', status: 404, code: 'not_found' },
    { name: 'unknown SSE invoice', method: 'GET', path: () => `/pay/invoices/${MISSING_ID}/events`, status: 404, code: 'not_found' },
    { name: 'unknown /pay path', method: 'GET', path: () => '/pay/nothing-here', status: 404, code: 'not_found' },
    { name: 'wrong method', method: 'POST', path: (id) => `/pay/invoices/${id}`, status: 405, code: 'method_not_allowed' },
    { name: 'wrong method on events', method: 'DELETE', path: (id) => `/pay/invoices/${id}/events`, status: 405, code: 'method_not_allowed' },
    { name: 'plain GET on the WebSocket endpoint', method: 'GET', path: (id) => `/pay/invoices/${id}/stream`, status: 426, code: 'upgrade_required' },
  ];
  for (const transport of TRANSPORTS) {
    test(`carries Access-Control-Allow-Origin: * and the error envelope (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = await createInvoice(till, store);
      for (const c of cases) {
        const res = await call(till, c.method, c.path(inv.id));
        assert.equal(res.status, c.status, `${c.name}: ${res.text}`);
        assert.equal(res.headers.get('access-control-allow-origin'), '*', c.name);
        assert.ok(res.headers.get('x-request-id'), `${c.name}: X-Request-Id`);
        if (c.code) {
          assert.equal(res.body.error.code, c.code, c.name);
          assert.equal(res.body.error.request_id, res.headers.get('x-request-id'), c.name);
        }
      }
    });

    test(`answers a preflight OPTIONS with 204 (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = await createInvoice(till, store);
      for (const path of [`/pay/invoices/${inv.id}`, `/pay/invoices/${inv.id}/events`, `/pay/invoices/${MISSING_ID}`]) {
        const res = await till.request(path, {
          method: 'OPTIONS',
          headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'last-event-id' },
        });
        assert.equal(res.status, 204, path);
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
        assert.match(res.headers.get('access-control-allow-methods') ?? '', /\bGET\b.*\bOPTIONS\b/);
        assert.match(res.headers.get('access-control-allow-headers') ?? '', /Last-Event-ID/i);
        assert.ok(Number(res.headers.get('access-control-max-age')) > 0);
        assert.equal(await res.text(), '');
      }
    });
  }
});

describe('CORS after a failed fdatasync', () => {
  test('a preflight still answers 204 (it reads nothing), so the page gets to read the GET\'s 503', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    await failSyncDuring(till, () => call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 2000 } }), 'EIO: i/o error, fdatasync');
    const pre = await till.request(`/pay/invoices/${inv.id}/events`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'last-event-id' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    const get = await call(till, 'GET', `/pay/invoices/${inv.id}`);
    assert.equal(get.status, 503);
    assert.equal(get.headers.get('access-control-allow-origin'), '*');
  });
});

describe('SSE /pay/invoices/:id/events', () => {
  for (const transport of TRANSPORTS) {
    test(`sends the snapshot, then every change in order, and ends after paid (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till, { confirmations: 2 });
      const inv = await createInvoice(till, store);
      const { res, reader } = await openEvents(till, t, inv.id);

      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      assert.equal(res.headers.get('cache-control'), 'no-cache, no-transform');
      assert.equal(res.headers.get('x-accel-buffering'), 'no');
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      if (transport === 'socket') assert.equal(res.headers.get('connection'), 'keep-alive');

      const first = await reader.nextJson();
      assert.deepEqual([first.event, first.id, first.data.status, first.data.amount_received_sats], ['invoice', '1', 'pending', 0]);
      assert.ok(reader.retryMs! >= 2000 && reader.retryMs! < 5000, `retry: ${reader.retryMs}`);
      assert.equal(first.data.store.name, 'Shop');
      assert.ok(!('metadata' in first.data));

      await simulate(till, store, inv.id, 'payment_detected');
      const detected = await reader.nextJson();
      assert.deepEqual([detected.id, detected.data.status, detected.data.amount_received_sats, detected.data.amount_confirmed_sats], ['2', 'pending', 10_000, 0]);
      assert.equal(detected.data.payments[0].confirmations, 0);

      await simulate(till, store, inv.id, 'paid');
      const paid = await reader.nextJson();
      assert.deepEqual([paid.id, paid.data.status, paid.data.amount_confirmed_sats], ['3', 'paid', 10_000]);
      assert.equal(paid.data.payments[0].confirmations, 2);

      await within(2000, 'the stream to end after paid', reader.ended);
      assert.equal(reader.messages.length, 3);
      await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 0, 'the stream to unsubscribe');
    });
  }

  test('expiry reaches the stream; an expired invoice stays open for a late payment, then ends', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 50_000, expires_in_minutes: 15 });
    const { reader } = await openEvents(till, t, inv.id);
    assert.equal((await reader.nextJson()).data.status, 'pending');

    till.clock.advance(15 * 60_000);
    assert.equal(await expireDueInvoices(till.rt.ctx), 1);
    const expired = await reader.nextJson();
    assert.deepEqual([expired.id, expired.data.status, expired.data.expired_at], ['2', 'expired', inv.expires_at]);
    // Inside the late window the invoice can still become late_paid: not final.
    assert.equal(await reader.quietFor(100), true);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 1);

    await simulate(till, store, inv.id, 'late_paid');
    const late = await reader.nextJson();
    assert.deepEqual([late.id, late.data.status], ['3', 'late_paid']);
    await within(2000, 'the stream to end after late_paid', reader.ended);
  });

  test('an expired stream ends by itself once the late window is over', async (t) => {
    const till = await startTestTill(t, { streamHeartbeatMs: 50 });
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 50_000, expires_in_minutes: 5 });
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    till.clock.advance(5 * 60_000);
    await expireDueInvoices(till.rt.ctx);
    assert.equal((await reader.nextJson()).data.status, 'expired');
    await reader.nextComment(1000); // still open: heartbeats go on

    till.clock.advance(7 * DAY_MS); // the default late window
    await within(2000, 'the stream to end when the late window closes', reader.ended);
    assert.equal(reader.messages.length, 2, 'nothing was written: time alone made it final');
  });

  test('a cancelled invoice ends the stream', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    assert.equal((await call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: store.key })).status, 200);
    const cancelled = await reader.nextJson();
    assert.deepEqual([cancelled.id, cancelled.data.status], ['2', 'cancelled']);
    await within(2000, 'the stream to end after cancelled', reader.ended);
  });

  test('Last-Event-ID: the current version gets only a resumed event until a change; an older one gets the snapshot at once', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    await simulate(till, store, inv.id, 'payment_detected'); // version 2

    const current = await openEvents(till, t, inv.id, { 'last-event-id': '2' });
    const behind = await openEvents(till, t, inv.id, { 'last-event-id': '1' });
    const garbage = await openEvents(till, t, inv.id, { 'last-event-id': 'abc' });

    const caughtUp = await behind.reader.nextJson();
    assert.deepEqual([caughtUp.id, caughtUp.data.amount_received_sats], ['2', 10_000]);
    assert.equal((await garbage.reader.nextJson()).id, '2');
    assert.deepEqual(await current.reader.next(), { id: null, event: 'resumed', data: '{}' }, 'the page sees its stream works');
    assert.equal(await current.reader.quietFor(150), true, 'the up-to-date client gets no repeat');

    await simulate(till, store, inv.id, 'paid');
    for (const { reader } of [current, behind, garbage]) {
      const next = await reader.nextJson();
      assert.deepEqual([next.id, next.data.status], ['3', 'paid']);
    }
  });

  test('a client that already has the final state gets 204 (EventSource stops reconnecting)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    await simulate(till, store, inv.id, 'paid'); // version 2, final

    const res = await till.request(`/pay/invoices/${inv.id}/events`, { headers: { 'last-event-id': '2' } });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');

    // Without it: the final snapshot, then the end.
    const { reader } = await openEvents(till, t, inv.id);
    assert.equal((await reader.nextJson()).data.status, 'paid');
    await within(2000, 'the stream of a paid invoice to end', reader.ended);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
  });

  test('sends a heartbeat comment every period (15 s by default; shortened here)', async (t) => {
    const till = await startTestTill(t, { streamHeartbeatMs: 40 });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    assert.equal(await reader.nextComment(1000), 'heartbeat');
    assert.equal(await reader.nextComment(1000), 'heartbeat');
    assert.equal(reader.messages.length, 1, 'heartbeats are comments, not messages');
  });

  test('the default heartbeat period is 15 s', async (t) => {
    const till = await startTestTill(t);
    assert.equal(till.rt.streamHeartbeatMs, 15_000);
  });

  for (const transport of TRANSPORTS) {
    test(`a client that goes away unsubscribes (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = await createInvoice(till, store);
      const readers = await Promise.all([1, 2, 3].map(() => openEvents(till, t, inv.id)));
      await Promise.all(readers.map(({ reader }) => reader.next()));
      assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 3);
      assert.equal(till.rt.externalChanges.watchedCount, 1);

      readers[0]!.reader.close();
      await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 2, 'one unsubscribe');
      readers[1]!.reader.close();
      readers[2]!.reader.close();
      await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 0, 'all unsubscribed');
      assert.equal(till.rt.externalChanges.watchedCount, 0);
    });
  }
});

/** Messages of a WebSocket, in order, with a way to wait for the next one and for the close. */
const portOf = (till: TestTill) => Number(new URL(till.url).port);
const wsUrl = (till: TestTill, path: string) => till.url.replace(/^http/, 'ws') + path;

describe('a stream\'s first snapshot (socket)', () => {
  test('is made when it is sent: server_time and branding current though another stream of the invoice is open', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const first = await openEvents(till, t, inv.id);
    assert.equal((await first.reader.nextJson()).data.server_time, new Date(till.clock.now()).toISOString());
    till.clock.advance(10 * 60_000);
    updateStore(till.rt.ctx, store.storeId, { name: 'Renamed Shop' });
    const now = new Date(till.clock.now()).toISOString();
    const second = await openEvents(till, t, inv.id);
    const sse = (await second.reader.nextJson()).data;
    const ws = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    const wsFirst = (await ws.next()).data;
    // The page counts down from server_time: one 10 minutes old gave the buyer 10 minutes that were not there.
    assert.deepEqual([sse.server_time, sse.store.name, wsFirst.server_time, wsFirst.store.name], [now, 'Renamed Shop', now, 'Renamed Shop']);
  });
});

describe('WebSocket /pay/invoices/:id/stream', () => {
  test('an upgrade request whose Host no URL can hold (port 99999) is refused 400 in the envelope, as without Upgrade (RFC 9112 3.2), not a bare 500 nor a socket', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const upgrade = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n';
    for (const path of [`/pay/invoices/${inv.id}/stream`, `/pay/invoices/${inv.id}`]) {
      const got = await rawConversation(till.url, `GET ${path} HTTP/1.1\r\nHost: example.com:99999\r\n${upgrade}\r\n`);
      assert.deepEqual(statusCodes(got), [400], got.slice(0, 200));
      const error = JSON.parse(got.slice(got.indexOf('{'))).error;
      assert.equal(error.code, 'validation_error');
      assert.match(error.message, /Host/);
      assert.equal(error.request_id, /x-request-id: ([\w-]+)/i.exec(got)?.[1]);
    }
  });

  test('a message larger than 4 KiB closes the socket (1009) rather than being buffered', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const ws = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await ws.next();
    ws.ws.send('x'.repeat(WS_MAX_PAYLOAD_BYTES + 1));
    assert.equal((await within(3000, 'the close', ws.closed)).code, 1009);
  });

  test('sends the snapshot, then every change, and closes 1000 after paid', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await within(2000, 'open', sock.opened);

    const first = await sock.next();
    assert.equal(first.type, 'invoice');
    assert.deepEqual([first.data.id, first.data.status], [inv.id, 'pending']);
    assert.ok(!('metadata' in first.data) && !('callback_url' in first.data));
    assert.equal(first.data.store.id, store.storeId);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 1);

    await simulate(till, store, inv.id, 'payment_detected');
    const detected = await sock.next();
    assert.deepEqual([detected.type, detected.data.amount_received_sats], ['invoice', 10_000]);
    await simulate(till, store, inv.id, 'paid');
    assert.equal((await sock.next()).data.status, 'paid');

    const closed = await within(2000, 'close after paid', sock.closed);
    assert.deepEqual(closed, { code: 1000, reason: 'invoice final' });
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 0, 'the socket to unsubscribe');
  });

  test('expiry reaches the socket', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 20_000, expires_in_minutes: 5 });
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    assert.equal((await sock.next()).data.status, 'pending');
    till.clock.advance(5 * 60_000);
    await expireDueInvoices(till.rt.ctx);
    assert.equal((await sock.next()).data.status, 'expired');
  });

  for (const [name, id] of [['unknown', MISSING_ID], ['malformed', 'inv_nope']] as const) {
    test(`an ${name} invoice is closed with 4404 "invoice not found" after the upgrade`, async (t) => {
      const till = await startTestTill(t);
      const sock = openSocket(t, wsUrl(till, `/pay/invoices/${id}/stream`));
      await within(2000, 'open', sock.opened);
      assert.deepEqual(await within(2000, 'close', sock.closed), { code: 4404, reason: 'invoice not found' });
    });
  }

  test('a snapshot that cannot be read closes the socket 1011 and logs why; the server goes on', async (t) => {
    const { logger, lines } = capturedLogger();
    const till = await startTestTill(t, { logger });
    renameTable(till, 'invoices', 'invoices_moved');
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${MISSING_ID}/stream`));
    await within(2000, 'open', sock.opened);
    assert.deepEqual(await within(2000, 'close', sock.closed), { code: 1011, reason: 'internal error' });
    const logged = lines.find((l) => l.msg === 'checkout stream failed to open');
    assert.ok(logged, JSON.stringify(lines));
    assert.equal(logged.level, 50);
    assert.match(logged.err.message, /no such table: invoices/);
    assert.equal((await till.request('/healthz')).status, 200);
  });

  test('a change whose snapshot cannot be made ends the streams (1013) and is logged; the writer that published it is not failed', async (t) => {
    const { logger, lines } = capturedLogger();
    const till = await startTestTill(t, { logger });
    const inv = await createInvoice(till, setupStore(till));
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await sock.next();
    const stored = till.rt.ctx.repos.invoices.get(inv.id)!;
    renameTable(till, 'stores', 'stores_moved');
    assert.doesNotThrow(() => till.rt.ctx.feed.publish({ ...stored, version: stored.version + 1 }));
    renameTable(till, 'stores_moved', 'stores');
    assert.deepEqual(await within(2000, 'close', sock.closed), { code: 1013, reason: 'database unavailable' });
    assert.match(lines.find((l) => l.msg === 'checkout stream update failed; the stream was ended')?.err.message ?? '', /no such table: stores/);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
  });

  test('Till stopping closes the socket 1001 "server restarting" and ends the event streams, those opened after too; answers stay current', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await sock.next();
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    till.rt.beginStop();
    assert.deepEqual(await within(2000, 'close', sock.closed), { code: 1001, reason: 'server restarting' });
    await within(2000, 'the event stream to end', reader.ended);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
    // An EventSource reconnecting during the grace gets the snapshot, then the end; a socket its open and the close.
    const late = await openEvents(till, t, inv.id);
    assert.equal((await late.reader.nextJson()).data.status, 'pending');
    await within(2000, 'the late event stream to end', late.reader.ended);
    const lateSock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    assert.equal((await lateSock.next()).data.status, 'pending');
    assert.deepEqual(await within(2000, 'close', lateSock.closed), { code: 1001, reason: 'server restarting' });
    // A change made meanwhile is what the API answers (the caches still hear of it).
    assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.status, 'pending');
    assert.equal((await call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: store.key })).status, 200);
    assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.status, 'cancelled');
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).body.status, 'cancelled');
  });

  test('a client that goes away unsubscribes', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await sock.next();
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 1);
    sock.ws.close();
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 0, 'unsubscribe after close');
  });

  test('the 101 carries an X-Request-Id and CORS, and the request is logged as 101 under that id', async (t) => {
    const { logger, lines } = capturedLogger();
    const till = await startTestTill(t, { logger });
    const inv = await createInvoice(till, setupStore(till));
    const { res, destroy } = await rawRequest(Number(new URL(till.url).port), `/pay/invoices/${inv.id}/stream`, '127.0.0.1', WS_HEADERS);
    t.after(destroy);
    assert.equal(res.statusCode, 101);
    assert.equal(res.headers['access-control-allow-origin'], '*', 'CORS on every answer under /pay/, the 101 too');
    const requestId = String(res.headers['x-request-id']);
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    await waitFor(() => lines.some((l) => l.msg === 'request' && l.req_id === requestId), 'the request log line');
    assert.equal(lines.find((l) => l.msg === 'request' && l.req_id === requestId)!.status, 101);
  });

  test('an incomplete handshake is 426 in the envelope, logged as such, never as 101', async (t) => {
    const { logger, lines } = capturedLogger();
    const till = await startTestTill(t, { logger });
    const inv = await createInvoice(till, setupStore(till));
    const port = Number(new URL(till.url).port);
    const partial: Array<{ headers: Record<string, string>; method?: string }> = [
      { headers: { upgrade: 'websocket' } },
      { headers: { ...WS_HEADERS, 'sec-websocket-key': 'short' } },
      { headers: { ...WS_HEADERS, 'sec-websocket-version': '12' } },
      { headers: { ...WS_HEADERS, 'sec-websocket-protocol': 'chat,,chat' } },
      { headers: { ...WS_HEADERS, 'sec-websocket-protocol': 'chat, chat' } },
      { headers: WS_HEADERS, method: 'HEAD' },
    ];
    for (const { headers, method } of partial) {
      const { res, body } = await rawRequest(port, `/pay/invoices/${inv.id}/stream`, '127.0.0.1', headers, method);
      assert.equal(res.statusCode, 426, JSON.stringify(headers));
      assert.equal(res.headers['access-control-allow-origin'], '*');
      if (method !== 'HEAD') assert.equal(JSON.parse(body).error.code, 'upgrade_required');
      // RFC 6455 4.2.2: the versions the server speaks, so a client can retry with one.
      assert.equal(res.headers['sec-websocket-version'], '13, 8');
      const requestId = String(res.headers['x-request-id']);
      await waitFor(() => lines.some((l) => l.msg === 'request' && l.req_id === requestId), 'the request log line');
      assert.equal(lines.find((l) => l.msg === 'request' && l.req_id === requestId)!.status, 426);
    }
  });

  test('pings every idle period and drops a peer that never answers; one that answers stays', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    // A server of the same app whose WebSocket idle period is 1 s instead of 30 s.
    const server = await listen(createApp(till.rt), '127.0.0.1', 0, { websocket: { options: { node: { idleTimeout: 1 } } } });
    t.after(() => server.close());

    const answering = openSocket(t, `${server.url.replace(/^http/, 'ws')}/pay/invoices/${inv.id}/stream`);
    await answering.next();
    const silent = await rawWebSocket(t, server.port, `/pay/invoices/${inv.id}/stream`);
    const firstFrame = await silent.nextFrame(2000);
    assert.equal(firstFrame.opcode, 0x1, 'the snapshot, as text');
    assert.equal(JSON.parse(firstFrame.payload.toString()).data.id, inv.id);

    const ping = await silent.nextFrame(2500);
    assert.equal(ping.opcode, 0x9, 'a ping within one idle period');
    await within(3000, 'the silent peer to be dropped', silent.closed);
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the dropped peer to unsubscribe');

    let answeringClosed = false;
    answering.closed.then(() => (answeringClosed = true));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(answeringClosed, false, 'a peer that answers pings stays connected');
  });

  test('a client that never answers the close frame (4404: unknown invoice) has its connection cut after the close timeout', async (t) => {
    const till = await startTestTill(t);
    const silent = await rawWebSocket(t, Number(new URL(till.url).port), '/pay/invoices/inv_00000000000000000000000000/stream');
    const close = await silent.nextFrame(2000);
    assert.equal(close.opcode, 0x8);
    assert.equal(close.payload.readUInt16BE(0), 4404);
    await within(WS_CLOSE_TIMEOUT_MS + 5000, 'the server to cut the connection', silent.closed);
  });

  test('a client that pings as fast as it can and reads nothing is dropped once 1 MiB of pongs waits for it', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const { socket, nextFrame } = await rawWebSocket(t, Number(new URL(till.url).port), `/pay/invoices/${inv.id}/stream`);
    assert.equal((await nextFrame(2000)).opcode, 0x1, 'upgraded: the snapshot');
    socket.on('error', () => {}); // the server's reset, once it drops the client
    socket.pause(); // from here on nothing is read: ws's pongs pile up on the server
    const burst = Buffer.concat(Array.from({ length: 8192 }, maskedPing)); // ~1 MiB of pings
    // Bounded: 128 MiB of pings, far past the point where the server must drop the client (a write then fails).
    let sent = 0;
    while (sent < 128 && !(await new Promise<Error | null | undefined>((resolve) => socket.write(burst, resolve)))) sent++;
    assert.ok(sent < 64, `still connected after ${sent} MiB of pings: the server holds their pongs`);
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).status, 200, 'the server goes on');
  });
});

/** One masked client ping frame with a 125-byte payload (the most a control frame carries). */
function maskedPing(): Buffer {
  const mask = Buffer.from([1, 2, 3, 4]);
  const payload = Buffer.alloc(125, 0x61).map((b, i) => b ^ mask[i % 4]!);
  return Buffer.concat([Buffer.from([0x89, 0x80 | 125]), mask, payload]);
}
/** A bare WebSocket client over TCP that never answers pings: sees frames as sent. */
async function rawWebSocket(t: TestContext, port: number, path: string) {
  const socket: Socket = connect(port, '127.0.0.1');
  t.after(() => socket.destroy());
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  let buffer = Buffer.alloc(0);
  let handshake = false;
  const frames: Array<{ opcode: number; payload: Buffer }> = [];
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!handshake) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      assert.match(buffer.subarray(0, end).toString(), /^HTTP\/1\.1 101/);
      handshake = true;
      buffer = buffer.subarray(end + 4);
    }
    // Server frames are unmasked; checkout messages are far below 64 KiB.
    while (buffer.length >= 2) {
      let len = buffer[1]! & 0x7f;
      let offset = 2;
      if (len === 126) {
        if (buffer.length < 4) return;
        len = buffer.readUInt16BE(2);
        offset = 4;
      }
      if (buffer.length < offset + len) return;
      frames.push({ opcode: buffer[0]! & 0x0f, payload: buffer.subarray(offset, offset + len) });
      buffer = buffer.subarray(offset + len);
    }
  });
  return {
    socket,
    closed,
    async nextFrame(timeoutMs: number) {
      await waitFor(() => frames.length > 0, 'a WebSocket frame', timeoutMs);
      return frames.shift()!;
    },
  };
}

/** An HTTP request from a chosen loopback address (127.0.0.x), answered with its head only. */
function rawRequest(port: number, path: string, localAddress: string, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<{ res: IncomingMessage; body: string; destroy(): void }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, localAddress, headers, agent: false, method }, (res) => {
      if (res.statusCode === 200) {
        resolve({ res, body: '', destroy: () => req.destroy() });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ res, body, destroy: () => req.destroy() }));
    });
    req.on('upgrade', (res, socket) => resolve({ res, body: '', destroy: () => socket.destroy() }));
    req.on('error', reject);
    req.end();
  });
}

const WS_HEADERS = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };

describe('upgrade requests to the HTTP routes (socket)', () => {
  const upgradeHead = (path: string) =>
    [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(WS_HEADERS).map(([name, value]) => `${name}: ${value}`), '', ''].join('\r\n');

  test('clients that reset the connection while the answer goes out leave the server running', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    for (let i = 0; i < 10; i++) {
      await new Promise<void>((done) => {
        const s = connect(portOf(till), '127.0.0.1', () => s.write(upgradeHead(`/pay/invoices/${inv.id}`), () => (s.resetAndDestroy(), done())));
        s.on('error', () => done());
      });
      await sleep(30);
    }
    // The process would have died of an unhandled socket 'error' (write ECONNRESET) by now.
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).status, 200);
  });

  test('the event stream refuses one (400) and holds no stream for it', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const r = await rawRequest(portOf(till), `/pay/invoices/${inv.id}/events`, '127.0.0.1', WS_HEADERS);
    assert.equal(r.res.statusCode, 400);
    const body = JSON.parse(r.body);
    assert.equal(body.error.code, 'validation_error');
    assert.match(body.error.message, /\/stream/);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0, 'no stream was opened');
  });
});

describe('stream limits', () => {
  test('per client address and in total, SSE and WebSocket together: 503 stream_limit_reached with Retry-After and CORS', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '2', TILL_MAX_STREAMS_TOTAL: '3' } });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const events = `/pay/invoices/${inv.id}/events`;
    const stream = `/pay/invoices/${inv.id}/stream`;
    const open: Array<{ destroy(): void }> = [];
    t.after(() => open.forEach((o) => o.destroy()));

    open.push(await rawRequest(portOf(till), events, '127.0.0.1'));
    const ws = await rawRequest(portOf(till), stream, '127.0.0.1', WS_HEADERS);
    assert.equal(ws.res.statusCode, 101);
    open.push(ws);
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 2, 'two streams');

    const refusals = [
      { what: 'SSE over the per-client limit', ...(await rawRequest(portOf(till), events, '127.0.0.1')) },
      { what: 'WebSocket over the per-client limit', ...(await rawRequest(portOf(till), stream, '127.0.0.1', WS_HEADERS)) },
    ];
    // Another address still has room, until the total is reached.
    open.push(await rawRequest(portOf(till), events, '127.0.0.2'));
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 3, 'three streams');
    refusals.push({ what: 'SSE over the total', ...(await rawRequest(portOf(till), events, '127.0.0.3')) });
    refusals.push({ what: 'WebSocket over the total', ...(await rawRequest(portOf(till), stream, '127.0.0.3', WS_HEADERS)) });

    for (const r of refusals) {
      assert.equal(r.res.statusCode, 503, r.what);
      assert.equal(r.res.headers['access-control-allow-origin'], '*', r.what);
      assert.ok(Number(r.res.headers['retry-after']) > 0, `${r.what}: Retry-After`);
      const body = JSON.parse(r.body);
      assert.equal(body.error.code, 'stream_limit_reached', r.what);
      assert.equal(body.error.retry_after_seconds, Number(r.res.headers['retry-after']));
      assert.equal(body.error.request_id, r.res.headers['x-request-id']);
    }
    // The snapshot endpoint is not a stream: still served.
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).status, 200);

    // A closed stream gives its slot back.
    open.shift()!.destroy();
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 2, 'the slot to be freed');
    const again = await rawRequest(portOf(till), events, '127.0.0.1');
    open.push(again);
    assert.equal(again.res.statusCode, 200);
  });

  test('a HEAD of the event stream answers its headers and holds no slot', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '2' } });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const events = `/pay/invoices/${inv.id}/events`;
    for (let i = 0; i < 3; i++) {
      const head = await rawRequest(portOf(till), events, '127.0.0.1', {}, 'HEAD');
      head.destroy();
      assert.equal(head.res.statusCode, 200);
      assert.equal(head.res.headers['content-type'], 'text/event-stream');
    }
    assert.equal((await rawRequest(portOf(till), `/pay/invoices/inv_01m7yrpc7rspwt7ppmhzfyg7qj/events`, '127.0.0.1', {}, 'HEAD')).res.statusCode, 404);
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
    const get = await rawRequest(portOf(till), events, '127.0.0.1');
    t.after(() => get.destroy());
    assert.equal(get.res.statusCode, 200, 'the client still has its slots');
  });

  test('a client gone while its stream waited for an fdatasync gives its slot back', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '1' } });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const events = `/pay/invoices/${inv.id}/events`;
    const held = heldSync();
    await till.rt.ctx.writes.useWalSync(held.sync);
    // Another creation's commit waits for its fdatasync.
    const created = call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 1000 } });
    await held.untilRequested();
    // The stream's answer waits for that fdatasync; its client leaves meanwhile.
    const req = httpRequest({ host: '127.0.0.1', port: portOf(till), path: events, agent: false });
    req.on('error', () => {});
    req.end();
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the stream opened');
    req.destroy();
    await sleep(50);
    held.finish();
    await till.rt.ctx.writes.useWalSync(null);
    assert.equal((await created).status, 201);
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 0, 'the stream to close');
    const again = await rawRequest(portOf(till), events, '127.0.0.1');
    t.after(() => again.destroy());
    assert.equal(again.res.statusCode, 200, 'the slot was given back');
  });

  test('a stream whose first read failed (1011 or 500) gives its slot and subscription back', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '1' } });
    const inv = await createInvoice(till, setupStore(till));
    const events = `/pay/invoices/${inv.id}/events`;
    renameTable(till, 'invoices', 'invoices_moved');
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    assert.equal((await within(2000, 'close', sock.closed)).code, 1011);
    const failed = await rawRequest(portOf(till), events, '127.0.0.1');
    failed.destroy();
    assert.equal(failed.res.statusCode, 500);
    renameTable(till, 'invoices_moved', 'invoices');
    assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
    const again = await rawRequest(portOf(till), events, '127.0.0.1');
    t.after(() => again.destroy());
    assert.equal(again.res.statusCode, 200, 'the client still has its slot');
  });

  test('behind a trusted proxy each forwarded client has its own limit; another peer cannot name a client', async (t) => {
    // 127.0.0.1 is trusted by default (a proxy on the same host); 127.0.0.2 is not.
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '1' } });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const events = `/pay/invoices/${inv.id}/events`;
    const open: Array<{ destroy(): void }> = [];
    t.after(() => open.forEach((o) => o.destroy()));
    const viaProxy = (client: string) => rawRequest(portOf(till), events, '127.0.0.1', { 'x-forwarded-for': client });

    for (const buyer of ['198.51.100.1', '198.51.100.2', '2001:db8::7']) {
      const res = await viaProxy(buyer);
      open.push(res);
      assert.equal(res.res.statusCode, 200, `a stream for ${buyer} through the proxy`);
    }
    const again = await viaProxy('198.51.100.1');
    assert.equal(again.res.statusCode, 503, 'the same buyer through the proxy is over its limit');
    // What a buyer writes itself, left of the proxy's entry, does not make it someone else.
    assert.equal((await viaProxy('203.0.113.9, 198.51.100.1')).res.statusCode, 503);

    const direct = await rawRequest(portOf(till), events, '127.0.0.2', { 'x-forwarded-for': '198.51.100.50' });
    open.push(direct);
    assert.equal(direct.res.statusCode, 200);
    const spoofed = await rawRequest(portOf(till), events, '127.0.0.2', { 'x-forwarded-for': '198.51.100.51' });
    assert.equal(spoofed.res.statusCode, 503, 'an untrusted peer counts as itself, whatever it forwards');
  });

  test('an IPv6 client counts by its /64: its other addresses share its limit, the next /64 has its own', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '2' } });
    const inv = await createInvoice(till, setupStore(till));
    const events = `/pay/invoices/${inv.id}/events`;
    const open: Array<{ destroy(): void }> = [];
    t.after(() => open.forEach((o) => o.destroy()));
    const viaProxy = async (client: string) => {
      const res = await rawRequest(portOf(till), events, '127.0.0.1', { 'x-forwarded-for': client });
      open.push(res);
      return res.res.statusCode;
    };
    assert.equal(await viaProxy('2001:db8:0:1::1'), 200);
    assert.equal(await viaProxy('2001:db8:0:1:ffff:ffff:ffff:fffe'), 200);
    assert.equal(await viaProxy('2001:DB8:0:1:abcd::9'), 503, 'a third address of the same /64 is over its limit');
    assert.equal(await viaProxy('2001:db8:0:2::1'), 200, 'the neighbouring /64 is another client');
    assert.equal(await viaProxy('198.51.100.1'), 200);
  });

  test('with no trusted proxy, X-Forwarded-For is ignored', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: '1', TILL_TRUSTED_PROXIES: '' } });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const events = `/pay/invoices/${inv.id}/events`;
    const first = await rawRequest(portOf(till), events, '127.0.0.1', { 'x-forwarded-for': '198.51.100.1' });
    t.after(() => first.destroy());
    assert.equal(first.res.statusCode, 200);
    assert.equal((await rawRequest(portOf(till), events, '127.0.0.1', { 'x-forwarded-for': '198.51.100.2' })).res.statusCode, 503);
  });
});

describe('changes made by another process', () => {
  // No CLI command changes an invoice yet, so a second better-sqlite3
  // connection to the same file plays the CLI: it commits a new status and
  // bumps `version` exactly as a repository write does.
  function writeFromAnotherProcess(till: TestTill, id: string, now: number): void {
    const other = new Database(databasePath(till.config.dataDir));
    try {
      other.pragma('busy_timeout = 5000');
      other.prepare(`UPDATE invoices SET status = 'cancelled', cancelled_at = ?, version = version + 1 WHERE id = ?`).run(now, id);
    } finally {
      other.close();
    }
  }

  test('reach the streams through the data_version poller', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { reader } = await openEvents(till, t, inv.id);
    const sock = openSocket(t, wsUrl(till, `/pay/invoices/${inv.id}/stream`));
    await reader.next();
    await sock.next();
    assert.equal(till.rt.externalChanges.poll(), 0, 'nothing changed yet');

    writeFromAnotherProcess(till, inv.id, till.clock.now());
    // data_version is read once per synchronous run: the poll above already did.
    await setImmediate();
    assert.equal(till.rt.externalChanges.poll(), 1);
    const cancelled = await reader.nextJson();
    assert.deepEqual([cancelled.id, cancelled.data.status, cancelled.data.cancelled_at], ['2', 'cancelled', new Date(till.clock.now()).toISOString()]);
    assert.equal((await sock.next()).data.status, 'cancelled');
    await within(2000, 'the stream to end', reader.ended);
    assert.equal(till.rt.externalChanges.poll(), 0, 'published once');
  });

  test('a stream opened after the change, before the poll, does not keep it from a stream opened before', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const first = await openEvents(till, t, inv.id);
    await first.reader.next();
    writeFromAnotherProcess(till, inv.id, till.clock.now());
    await setImmediate();
    // The second stream reads the new version itself.
    const second = await openEvents(till, t, inv.id);
    assert.equal((await second.reader.nextJson()).data.status, 'cancelled');
    assert.equal(till.rt.externalChanges.poll(), 1);
    assert.equal((await first.reader.nextJson()).data.status, 'cancelled');
  });

  test('in-process changes are not published a second time by the poller', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    await simulate(till, store, inv.id, 'payment_detected');
    assert.equal((await reader.nextJson()).id, '2');
    // Our own commit does not move data_version; another connection's commit
    // elsewhere does, and the poller then finds nothing new for this invoice.
    const other = new Database(databasePath(till.config.dataDir));
    other.prepare(`INSERT INTO meta (key, value) VALUES ('poller-test', '1') ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run();
    other.close();
    assert.equal(till.rt.externalChanges.poll(), 0);
    assert.equal(await reader.quietFor(100), true);
  });

  test('a polled snapshot shows an in-process change at once, another process\'s within a second', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).body.status, 'pending');

    await simulate(till, store, inv.id, 'payment_detected');
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).body.amount_received_sats, 10_000, 'published changes evict the cached snapshot');

    // Nobody streams this invoice, so no poller republishes it: the cached
    // snapshot may be up to a second old.
    writeFromAnotherProcess(till, inv.id, till.clock.now());
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).body.status, 'pending');
    till.clock.advance(1000);
    assert.equal((await call(till, 'GET', `/pay/invoices/${inv.id}`)).body.status, 'cancelled');
  });

  test('the running server notices within about a second', async (t) => {
    const till = await startTestTill(t, { startWorkers: true });
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { reader } = await openEvents(till, t, inv.id);
    await reader.next();
    writeFromAnotherProcess(till, inv.id, till.clock.now());
    const started = Date.now();
    assert.equal((await reader.nextJson(3000)).data.status, 'cancelled');
    assert.ok(Date.now() - started < 2500);
  });
});
