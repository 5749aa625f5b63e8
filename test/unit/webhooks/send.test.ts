import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { sendWebhook } from '../../../src/webhooks/send.ts';

// sendWebhook never throws: whatever goes wrong comes back as a SendResult the
// worker records. (Answers, timeouts and redirects: test/integration/webhooks.)

const base = { body: '{}', timeoutMs: 2000, allowPrivate: true, headers: { 'content-type': 'application/json' } };

test('a URL that is not http(s) is an outcome, not an exception', async () => {
  for (const url of ['not a url', 'ftp://127.0.0.1/hooks', 'file:///etc/passwd']) {
    assert.deepEqual(await sendWebhook({ ...base, url }), { responseBody: null, error: 'invalid URL', timedOut: false, durationMs: 0 }, url);
  }
});

test('a header value the client refuses to send is an outcome, not an exception', async () => {
  const result = await sendWebhook({ ...base, url: 'http://127.0.0.1:9/hooks', headers: { ...base.headers, 'x-service-event-type': 'a\r\nInjected: yes' } });
  assert.equal(result.status, undefined);
  assert.equal(result.timedOut, false);
  assert.match(result.error ?? '', /header/i);
});

test('a private address is refused before connecting unless allowed', async () => {
  const result = await sendWebhook({ ...base, url: 'http://127.0.0.1:9/hooks', allowPrivate: false });
  assert.match(result.error ?? '', /127\.0\.0\.1 is a private address/);
  // A name that resolves privately: refused at connect time, without saying to what (an API key holder reads the error).
  const named = await sendWebhook({ ...base, url: 'http://localhost:9/hooks', allowPrivate: false });
  assert.equal(named.error, 'localhost resolves only to private addresses; allow them with webhooks.allow_private');
});

test('a receiver whose certificate no CA signed: the error says so, without Node\'s hint to run it with --use-system-ca', async (t) => {
  const dir = new URL('../../fixtures/tls/', import.meta.url);
  const server = createServer({ key: readFileSync(new URL('self-signed.key', dir)), cert: readFileSync(new URL('self-signed.crt', dir)) }, (_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const result = await sendWebhook({ ...base, url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
  assert.equal(result.status, undefined);
  assert.equal(result.error, 'DEPTH_ZERO_SELF_SIGNED_CERT: self-signed certificate');
});

test('a receiver that answers 100 Continue unasked, then 200: a failed attempt that says what was wrong (Till sends no Expect)', async (t) => {
  const server = createNetServer((socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const result = await sendWebhook({ ...base, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
  assert.equal(result.status, undefined);
  assert.match(result.error ?? '', /^UND_ERR_SOCKET: bad response \(an answer Till cannot read: a 100 Continue it did not ask for/);
});
