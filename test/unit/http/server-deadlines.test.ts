// listen()'s connection deadlines: a client has headersMs from connecting to
// begin its request, headersMs from its first byte to end its headers and
// requestMs for the whole request; answers may take as long as they take.
// Short deadlines here; the defaults are in src/http/internal/connection-deadlines.ts.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test, type TestContext } from 'node:test';
import { H3 } from 'h3';
import { listen } from '../../../src/http/server.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';

const DEADLINES = { headersMs: 1000, requestMs: 2000 };
const CHUNKS = 8;

async function start(t: TestContext): Promise<string> {
  const app = new H3();
  app.get('/hello', () => 'hi');
  // The read fails when the deadline cuts the body: answered in the envelope by Node's listener, not here.
  app.post('/echo', (event) => event.req.text().catch(() => ''));
  // Answers for ~2.4 s, past both deadlines.
  app.get('/stream', () => {
    let sent = 0;
    return new ReadableStream({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 300));
        controller.enqueue(new TextEncoder().encode(`chunk${++sent};`));
        if (sent === CHUNKS) controller.close();
      },
    });
  });
  const server = await listen(app, '127.0.0.1', 0, { deadlines: DEADLINES });
  t.after(() => server.close());
  return server.url;
}

// Each past its deadline (timed by Node): the 400 envelope "not received in time" from the clientError listener, then the connection closes.
for (const [what, bytes] of [
  ['a connection that sends nothing', ''],
  ['headers that stop half-way', 'GET /hello HTTP/1.1\r\nHost: x\r\n'],
  ['a body that stops half-way', 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc'],
] as const) {
  test(`${what}: the 400 envelope "not received in time" once its deadline passes, then the connection closes`, async (t) => {
    const text = await rawConversation(await start(t), bytes);
    assert.deepEqual(statusCodes(text), [400]);
    assert.match(text, /"code":"validation_error".*not received in time/);
  });
}

test('a connection opened early whose request begins within the deadline and ends its headers within the next is answered (a browser preconnects)', async (t) => {
  const url = await start(t);
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  let got = '';
  socket.on('data', (d) => (got += d.toString('latin1')));
  const closed = new Promise((r) => socket.once('close', r));
  await new Promise((r) => socket.once('connect', r));
  await new Promise((r) => setTimeout(r, DEADLINES.headersMs / 2));
  socket.write('GET /hello HTTP/1.1\r\n');
  // Past headersMs from connecting, but its first byte came in time: its headers have headersMs from that byte.
  await new Promise((r) => setTimeout(r, DEADLINES.headersMs * 0.6));
  socket.write('Host: x\r\nConnection: close\r\n\r\n');
  await closed;
  assert.deepEqual(statusCodes(got), [200]);
  assert.match(got, /\r\n\r\nhi$/);
});

test('an answer that streams for longer than both deadlines is not cut', async (t) => {
  const url = await start(t);
  const text = await rawConversation(url, 'GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.deepEqual(statusCodes(text), [200]);
  for (let i = 1; i <= CHUNKS; i++) assert.match(text, new RegExp(`chunk${i};`));
});
