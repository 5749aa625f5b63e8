import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/clock.ts';
import { answer, startWebhookReceiver, type WebhookReceiver } from '../fakes/webhook-receiver.ts';

const clock = new ManualClock('2026-11-21T10:00:00.000Z');
let receiver: WebhookReceiver;

before(async () => {
  receiver = await startWebhookReceiver({ clock });
});
after(() => receiver.close());

function post(path: string, body: string, init: RequestInit = {}): Promise<Response> {
  return fetch(receiver.url + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Service-Event-Id': 'evt_1' },
    body,
    signal: AbortSignal.timeout(2000),
    ...init,
  });
}

describe('webhook receiver', () => {
  test('listens on 127.0.0.1 and records each request exactly', async () => {
    receiver.respondWith();
    const before = receiver.requests.length;
    const body = '{"note":"café ☕"}';
    const res = await post('/hooks?x=1', body);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
    assert.match(receiver.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const got = receiver.requests[before]!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/hooks?x=1');
    assert.equal(got.headers['x-service-event-id'], 'evt_1');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.body, body);
    assert.deepEqual(got.rawBody, Buffer.from(body, 'utf8'));
    assert.equal(got.receivedAt, clock.now());
  });

  test('plays a queue of answers in order, then answers 200 again', async () => {
    const statuses = [200, 201, 204, 400, 404, 410, 500, 503];
    receiver.respondWith(...statuses.map((s) => answer.status(s, s === 204 ? '' : `answer ${s}`)));
    for (const s of statuses) {
      const res = await post('/', '{}');
      assert.equal(res.status, s);
      assert.equal(await res.text(), s === 204 ? '' : `answer ${s}`);
    }
    assert.equal((await post('/', '{}')).status, 200);
  });

  test('answers with a function per request', async () => {
    receiver.respondWith((req) => answer.status(req.url === '/fail' ? 503 : 202, req.body));
    const a = await post('/fail', 'one');
    const b = await post('/ok', 'two');
    assert.deepEqual([a.status, await a.text(), b.status, await b.text()], [503, 'one', 202, 'two']);
    receiver.respondWith();
  });

  test('hang: never answers, so the caller times out', async () => {
    receiver.respondWith(answer.hang());
    const before = receiver.requests.length;
    await assert.rejects(post('/', '{}', { signal: AbortSignal.timeout(300) }), { name: 'TimeoutError' });
    assert.equal(receiver.requests.length, before + 1, 'the hanging request was still recorded');
  });

  test('reset: the connection dies without an answer', async () => {
    receiver.respondWith(answer.reset());
    await assert.rejects(post('/', '{}'), (err: Error) => {
      assert.equal(err.name, 'TypeError');
      assert.match(String((err.cause as { code?: string } | undefined)?.code), /ECONNRESET|UND_ERR_SOCKET/);
      return true;
    });
  });

  test('slowBody: headers arrive at once, the body dribbles past a timeout', async () => {
    receiver.respondWith(answer.slowBody({ status: 200, chunk: 'x', chunks: 20, intervalMs: 100 }));
    const res = await post('/', '{}', { signal: AbortSignal.timeout(300) });
    assert.equal(res.status, 200);
    await assert.rejects(res.text(), { name: 'TimeoutError' });
  });

  test('slowBody: the whole body arrives for a patient caller', async () => {
    receiver.respondWith(answer.slowBody({ status: 500, chunk: 'ab', chunks: 3, intervalMs: 20 }));
    const res = await post('/', '{}');
    assert.equal(res.status, 500);
    assert.equal(await res.text(), 'ababab');
  });

  test('redirect: a 3xx with Location, which a non-following client sees as is', async () => {
    receiver.respondWith(answer.redirect('/moved', 307));
    const before = receiver.requests.length;
    const res = await post('/', '{}', { redirect: 'manual' });
    assert.equal(res.status, 307);
    assert.equal(res.headers.get('location'), '/moved');
    assert.equal(receiver.requests.length, before + 1);
  });

  test('waitForRequests resolves once n requests arrived, and rejects on its timeout', async () => {
    receiver.respondWith();
    const n = receiver.requests.length + 2;
    const waiting = receiver.waitForRequests(n, 2000);
    await post('/', 'a');
    await post('/', 'b');
    const all = await waiting;
    assert.deepEqual(all.slice(-2).map((r) => r.body), ['a', 'b']);
    await assert.rejects(receiver.waitForRequests(n + 1, 50), /expected \d+ request\(s\) within 50 ms, got \d+/);
  });
});

test('close() ends hanging and dribbling connections instead of waiting for them', async () => {
  const r = await startWebhookReceiver();
  r.respondWith(answer.hang(), answer.slowBody({ intervalMs: 1000, chunks: 60 }));
  const hanging = fetch(r.url, { method: 'POST', body: 'x', signal: AbortSignal.timeout(5000) });
  const dribbling = await fetch(r.url, { method: 'POST', body: 'y', signal: AbortSignal.timeout(5000) });
  await r.waitForRequests(2, 2000);
  const started = performance.now();
  await r.close();
  assert.ok(performance.now() - started < 1000, 'close did not wait for the scripted answers');
  await assert.rejects(hanging, { name: 'TypeError' });
  await assert.rejects(dribbling.text());
});
