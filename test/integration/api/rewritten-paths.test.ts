import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { startTestTill } from '../../helpers/till-server.ts';

// A reverse proxy that forwards only /pay/ and /checkout/ (docs/CHECKOUT.md)
// passes these paths on as sent (nginx's proxy_pass without a URI does). The
// URL parser would resolve them to /healthz, /v1/… or /stores/…: each must be
// no route, also as a WebSocket upgrade.
const REWRITTEN = [
  '/pay/..\\healthz',
  '/checkout/..\\healthz',
  '/pay/%2e%2e/healthz',
  '/pay/.%2E/v1/openapi.json',
  '/checkout/x/../../v1/invoices',
  '/pay/./../healthz?x=1',
];

test('a path the URL parser would rewrite (a backslash, a dot segment, %2e) is no route: 404, logged as sent', async (t) => {
  const { logger, lines } = capturedLogger();
  const till = await startTestTill(t, { logger });
  for (const path of REWRITTEN) {
    const text = await rawConversation(till.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    assert.deepEqual(statusCodes(text), [404], path);
    assert.match(text, /"code":"not_found"/, path);
  }
  const logged = lines.filter((l) => l.msg === 'request').map((l) => [l.path, l.status]);
  assert.deepEqual(logged, REWRITTEN.map((p) => [p.split('?')[0], 404]));
  // The routes themselves still answer.
  assert.deepEqual(statusCodes(await rawConversation(till.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')), [200]);
});

test('nor as a WebSocket upgrade: 404, not the answer of the route it resolves to', async (t) => {
  const till = await startTestTill(t);
  const upgrade = 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
  for (const path of REWRITTEN.slice(0, 3)) {
    const text = await rawConversation(till.url, `GET ${path} HTTP/1.1\r\nHost: x\r\n${upgrade}\r\n`);
    assert.deepEqual(statusCodes(text), [404], path);
  }
});
