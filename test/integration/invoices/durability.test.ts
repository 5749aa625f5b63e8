// A commit is seen outside the process only once it is on disk: answers,
// stream messages and webhooks wait while its fdatasync runs off the event
// loop. The runtime's WalSync is swapped for one whose fdatasync returns when
// the test says so.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OPENAPI_DOCUMENT } from '../../../src/http/openapi.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { failSyncDuring, heldSync } from '../../helpers/held-sync.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestTill } from '../../helpers/till-server.ts';
import { openEvents, openSocket, within } from '../checkout/checkout-helpers.ts';
import { startWebhookFixture } from '../webhooks/helpers.ts';
import { assertInvoice, postInvoice } from './invoice-api.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const transport of TRANSPORTS) {
  describe(`durable before seen (${transport})`, () => {
    test('a change whose fdatasync has not returned is answered to nobody, neither its caller nor a reader', async (t) => {
      const till = await startTestTill(t, { transport });
      const s = setupStore(till);
      const inv = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
      const held = heldSync();
      await till.rt.ctx.writes.useWalSync(held.sync);
      const answered: string[] = [];
      const cancel = call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key }).then((r) => (answered.push('cancel'), r));
      await held.untilRequested();
      assert.equal(till.rt.ctx.db.prepare('SELECT status FROM invoices WHERE id = ?').pluck().get(inv.id), 'cancelled', 'committed, not yet durable');
      const reads = [
        call(till, 'GET', `/v1/invoices/${inv.id}`, { key: s.key }),
        call(till, 'GET', '/v1/invoices', { key: s.key }),
        call(till, 'GET', `/pay/invoices/${inv.id}`),
        call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key }),
      ].map((p, i) => p.then((r) => (answered.push(`read ${i}`), r)));
      await sleep(100);
      assert.deepEqual(answered, [], 'nothing answered before the fdatasync returned');

      held.finish();
      const detached = till.rt.ctx.writes.useWalSync(null);
      const [cancelled, byId, list, snapshot, again] = await Promise.all([cancel, ...reads]);
      await detached;
      assert.equal(assertInvoice(cancelled, 200).status, 'cancelled');
      assert.equal(byId!.body.status, 'cancelled');
      assert.equal(list!.body.data[0].status, 'cancelled');
      assert.equal(snapshot!.body.status, 'cancelled');
      assert.equal(again!.status, 409, 'the second cancel saw the first');
    });

    test('a creation is answered once its fdatasync returned, without waiting for the next batch\'s', async (t) => {
      const till = await startTestTill(t, { transport });
      const s = setupStore(till);
      const held = heldSync();
      await till.rt.ctx.writes.useWalSync(held.sync);
      let answered = false;
      const first = postInvoice(till, s.key, { amount_sats: 1000 }).then((r) => ((answered = true), r));
      await held.untilRequested();
      await sleep(50);
      assert.equal(answered, false);
      held.finish();
      // The next batch commits as soon as the first is durable; the first's answer does not wait for it.
      const second = postInvoice(till, s.key, { amount_sats: 2000 });
      assertInvoice(await first);
      await held.untilRequested();
      held.finish();
      const detached = till.rt.ctx.writes.useWalSync(null);
      assert.equal(assertInvoice(await second).amount_sats, 2000);
      await detached;
    });
  });
}

describe('durable before streamed (socket)', () => {
  test('a checkout stream opened while a change waits for its fdatasync starts with that change once it returned', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    const inv = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    const held = heldSync();
    await till.rt.ctx.writes.useWalSync(held.sync);
    const cancel = call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key });
    await held.untilRequested();
    let sseOpen = false;
    const sse = openEvents(till, t, inv.id).then((o) => ((sseOpen = true), o));
    const ws = new WebSocket(`${till.url.replace(/^http/, 'ws')}/pay/invoices/${inv.id}/stream`);
    t.after(() => ws.close());
    const wsFirst = new Promise<any>((resolve) => ws.addEventListener('message', (e) => resolve(JSON.parse(String(e.data))), { once: true }));
    let wsMessage = false;
    void wsFirst.then(() => (wsMessage = true));
    await sleep(100);
    assert.equal(sseOpen, false, 'the SSE answer waits');
    assert.equal(wsMessage, false, 'the WebSocket sends nothing yet');

    held.finish();
    const detached = till.rt.ctx.writes.useWalSync(null);
    await cancel;
    const { reader } = await sse;
    assert.equal((await reader.nextJson()).data.status, 'cancelled');
    assert.equal((await within(3000, 'the first WebSocket message', wsFirst)).data.status, 'cancelled');
    await detached;
  });
});

/** A WebSocket handshake's answer: its status, and its body as JSON when it has one (a refusal may leave the connection open). */
async function openHandshake(base: string, path: string): Promise<{ status: number; body: any }> {
  const request = `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;
  const text = await rawConversation(base, request, () => null, 2000).catch((err: Error) => err.message.replace(/^timeout: /, ''));
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return { status: statusCodes(text)[0]!, body: body.startsWith('{') ? JSON.parse(body) : null };
}

/** Creates an invoice whose batch's fdatasync fails with `message`. */
async function createWhileSyncFails(till: TestTill, key: string, message: string) {
  const { held, result } = await failSyncDuring(till, () => postInvoice(till, key, { amount_sats: 1000 }), message);
  return { held, refused: result };
}

describe('a failed fdatasync (socket)', () => {
  test('refuses its batch and every later write with 503 database_unavailable, and /healthz says so', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    assert.deepEqual((await call(till, 'GET', '/healthz')).body.database, { status: 'ok', error: null });
    const { held, refused } = await createWhileSyncFails(till, s.key, 'EIO: i/o error, fdatasync');
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'database_unavailable');
    assert.match(refused.body.error.message, /may or may not be saved/);
    assert.equal((await postInvoice(till, s.key, { amount_sats: 1000 })).status, 503, 'later writes are refused too');
    assert.equal(held.requested, 0, 'nothing more was committed');
    const health = await call(till, 'GET', '/healthz');
    assert.equal(health.status, 503);
    assert.equal(health.body.status, 'degraded');
    assert.deepEqual(health.body.database, { status: 'failed', error: 'EIO: i/o error, fdatasync' });
  });

  test('its batch is answered to nobody: readers that waited for it, later reads, replays and webhooks are refused', async (t) => {
    const f = await startWebhookFixture(t);
    const { till, store } = f;
    const before = assertInvoice(await postInvoice(till, store.key, { amount_sats: 1000 }));
    await f.till.rt.webhooks.runOnce();
    const sentBefore = f.receiver.requests.length;
    const { reader } = await openEvents(till, t, before.id);
    assert.equal((await reader.nextJson()).data.status, 'pending');
    const openWs = openSocket(t, `${till.url.replace(/^http/, 'ws')}/pay/invoices/${before.id}/stream`);
    assert.equal((await openWs.next()).data.status, 'pending');
    const held = heldSync();
    await till.rt.ctx.writes.useWalSync(held.sync);
    const idem = { 'idempotency-key': 'order-1' };
    const created = call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 2000 }, headers: idem });
    await held.untilRequested();
    const refusedId = till.rt.ctx.db.prepare('SELECT id FROM invoices WHERE amount_sats = 2000').pluck().get() as string;
    assert.ok(refusedId, 'committed, not yet durable');
    // Readers arriving while the fdatasync runs: each would show the new invoice.
    const waiting = [
      call(till, 'GET', '/v1/invoices', { key: store.key }),
      call(till, 'GET', `/v1/invoices/${refusedId}`, { key: store.key }),
      call(till, 'GET', `/pay/invoices/${refusedId}`),
    ];
    await sleep(50);
    held.finish(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    assert.equal((await created).status, 503);
    for (const r of await Promise.all(waiting)) {
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body.error.code, 'database_unavailable');
      assert.doesNotMatch(r.text, new RegExp(refusedId));
    }
    // Later reads too, of invoices made before as well: the process cannot tell one from the other.
    for (const path of [`/v1/invoices/${refusedId}`, `/v1/invoices/${before.id}`, `/pay/invoices/${before.id}`, '/v1/invoices']) {
      const r = await call(till, 'GET', path, { key: store.key });
      assert.equal(r.status, 503, `${path}: ${r.text}`);
      assert.ok(r.headers.get('x-request-id'));
      assert.equal(r.body.error.request_id, r.headers.get('x-request-id'));
    }
    const replay = await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 2000 }, headers: idem });
    assert.equal(replay.status, 503, 'the refused creation is not replayed as a 201');
    assert.equal(replay.headers.get('idempotent-replayed'), null);
    await f.till.rt.webhooks.runOnce();
    assert.equal(f.receiver.requests.length, sentBefore, 'no webhook of the refused batch was sent');
    // Streams open before the failure end, having told nothing more, so the page goes on another way
    // (WebSocket: 1013, try again later); a change published from outside the queue (the chain watcher's) reaches none.
    const stored = till.rt.ctx.repos.invoices.get(before.id)!;
    till.rt.ctx.feed.publish({ ...stored, status: 'paid', version: stored.version + 1 });
    await within(3000, 'the open SSE stream to end', reader.ended);
    assert.deepEqual(reader.messages.map((m) => JSON.parse(m.data).status), ['pending'], 'the SSE stream heard nothing more');
    assert.deepEqual(await within(3000, 'the open WebSocket to close', openWs.closed), { code: 1013, reason: 'database unavailable' });
    await assert.rejects(openWs.next(0), /no WebSocket message/, 'the WebSocket heard nothing more');
    // A WebSocket is refused with the 503, not upgraded and then closed.
    const ws = new WebSocket(`${till.url.replace(/^http/, 'ws')}/pay/invoices/${before.id}/stream`);
    const wsEnd = await new Promise<string>((resolve) => {
      ws.addEventListener('open', () => resolve('opened'));
      ws.addEventListener('error', () => resolve('refused'));
    });
    ws.close();
    assert.equal(wsEnd, 'refused');
    assert.equal((await call(till, 'GET', '/healthz')).status, 503, '/healthz still answers, to say so');
  });

  test('stops the background workers, which could only fail: one error is logged, not one a second', async (t) => {
    const { logger, lines } = capturedLogger();
    const till = await startTestTill(t, { logger, startWorkers: true, expiryIntervalMs: 10 });
    const s = setupStore(till);
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    assert.equal((await createWhileSyncFails(till, s.key, 'EIO: i/o error, fdatasync')).refused.status, 503);
    // Both invoices are due: a running expiry worker would try, and fail, every 10 ms.
    till.clock.advance(31 * 60_000);
    await sleep(200);
    const errors = lines.filter((l) => l.level === 'error' || l.level === 50).map((l) => l.msg);
    assert.deepEqual(errors, ['the WAL could not be made durable: Till answers nothing from its database until it is restarted']);
  });

  test('every route then answers as /v1/openapi.json says it may: the 503 is documented where it comes', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    const invoice = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    const endpoint = await call(till, 'POST', `/v1/stores/${s.storeId}/webhooks`, { key: s.key, body: { url: 'https://shop.example/hook' } });
    assert.equal(endpoint.status, 201);
    assert.equal((await createWhileSyncFails(till, s.key, 'EIO: i/o error, fdatasync')).refused.status, 503);
    const ids: Record<string, string> = { '/v1/stores/{id}': s.storeId, '/stores/{id}': s.storeId, '{id}': invoice.id, '{wid}': endpoint.body.id, '{name}': 'checkout.js' };
    const undocumented: string[] = [];
    for (const [path, operations] of Object.entries(OPENAPI_DOCUMENT.paths as unknown as Record<string, Record<string, { responses: Record<string, { 'x-error-codes'?: string[] }> }>>)) {
      let url = path;
      for (const [name, id] of Object.entries(ids)) url = url.replace(name, name.startsWith('/') ? name.replace('{id}', id) : id);
      for (const [method, operation] of Object.entries(operations)) {
        const r = path.endsWith('/stream') ? await openHandshake(till.url, url) : await call(till, method.toUpperCase(), url, { key: s.key });
        const documented = operation.responses[String(r.status)];
        const code = r.status >= 400 ? r.body?.error?.code : undefined;
        if (!documented || (code && documented['x-error-codes'] && !documented['x-error-codes'].includes(code))) undocumented.push(`${method.toUpperCase()} ${path}: ${r.status} ${code ?? ''}`);
      }
    }
    assert.deepEqual(undocumented, []);
  });

  test('a full disk is disk_full', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    const { refused } = await createWhileSyncFails(till, s.key, 'ENOSPC: no space left on device, fdatasync');
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'disk_full');
  });
});

describe('durable before sent', () => {
  test('a webhook for a commit whose fdatasync has not returned waits for it', async (t) => {
    const f = await startWebhookFixture(t);
    const held = heldSync();
    await f.till.rt.ctx.writes.useWalSync(held.sync);
    const created = call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
    await held.untilRequested();
    // The worker finds the committed delivery and starts it.
    const run = f.till.rt.webhooks.runOnce();
    await sleep(100);
    assert.equal(f.receiver.requests.length, 0, 'nothing sent before the fdatasync returned');
    held.finish();
    const detached = f.till.rt.ctx.writes.useWalSync(null);
    assert.equal((await created).status, 201);
    assert.equal(await run, 1);
    await detached;
    assert.equal(f.receiver.requests.length, 1);
    assert.equal(JSON.parse(f.receiver.requests[0]!.body).event_type, 'invoice.created');
  });
});
