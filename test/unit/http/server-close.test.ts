// listen().close({ graceMs }): requests under way get up to graceMs to be
// answered, then connections are cut; close waits no longer than they need.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { H3 } from 'h3';
import { listen } from '../../../src/http/server.ts';

function get(agent: http.Agent, url: string): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body, connection: res.headers.connection }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

test('a keep-alive request under way is answered and close ends soon after, not at the grace', async (t) => {
  const app = new H3();
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, 500));
    return 'done';
  });
  const server = await listen(app, '127.0.0.1', 0);
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const answer = get(agent, `${server.url}/slow`);
  await new Promise((r) => setTimeout(r, 100));
  const started = Date.now();
  await server.close({ graceMs: 10_000 });
  const took = Date.now() - started;
  // Begun before the close, answered after it: the client is told the connection ends.
  assert.deepEqual(await answer, { status: 200, body: 'done', connection: 'close' });
  assert.ok(took < 5000, `close took ${took} ms (its grace: 10 s) for a request answered after ~400 ms`);
});

test('during the grace a kept-alive connection is not used for new requests', async (t) => {
  const app = new H3();
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, 300));
    return 'done';
  });
  app.get('/fast', () => 'fast');
  const server = await listen(app, '127.0.0.1', 0);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const first = get(agent, `${server.url}/slow`);
  await new Promise((r) => setTimeout(r, 100));
  const closing = server.close({ graceMs: 3000 });
  assert.equal((await first).body, 'done');
  // The first answer said Connection: close: the agent cannot send another request on that connection.
  const second = await get(agent, `${server.url}/fast`).then((r) => `served ${r.status}`, (e: Error) => `refused ${e.message}`);
  await closing;
  assert.match(second, /^refused/, 'a new request was served after close() began');
});

test('a request that outlives the grace is cut when it ends', async (t) => {
  const app = new H3();
  app.get('/never', () => new Promise(() => {}));
  const server = await listen(app, '127.0.0.1', 0);
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const answer = get(agent, `${server.url}/never`).then(() => 'answered', (e: Error) => `cut: ${e.message}`);
  await new Promise((r) => setTimeout(r, 100));
  await server.close({ graceMs: 300 });
  assert.match(await answer, /^cut/);
});
