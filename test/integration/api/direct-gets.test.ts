import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { DirectGets } from '../../../src/http/internal/direct-get.ts';
import { directRoutesOf } from '../../../src/http/internal/direct-routes.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { rawExchange } from '../../helpers/raw-http.ts';
import { setupStore, startTestTill, type TestStore, type TestTill } from '../../helpers/till-server.ts';
import { postInvoice } from '../invoices/invoice-api.ts';

// GET /v1/invoices/:id, GET /v1/invoices and GET /pay/invoices/:id are also
// answered straight from Node's request, ahead of srvx and h3. Whichever side
// answers, the client must not be able to tell: same status, headers, body
// and log line; and anything unusual is answered by the app in full.

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A request over the socket with raw headers (repeats allowed), answered with Date left out. */
function rawGet(till: TestTill, path: string, headers: string[] = [], method = 'GET'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    // Headers given as a list go out as they are: Host included.
    const host = ['host', new URL(till.url).host];
    // The path goes out as written (a URL would be normalized first).
    const { hostname, port } = new URL(till.url);
    const req = http.request({ hostname, port, path, method, headers: [...host, ...headers], agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => {
        const { date: _date, connection: _c, 'keep-alive': _k, ...rest } = res.headers as Record<string, string>;
        resolve({ status: res.statusCode!, headers: rest, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Counts the requests the Node-side direct GETs answered. */
function countDirectAnswers(till: TestTill): { count: number } {
  const direct = directRoutesOf(till.app)!.gets;
  const counter = { count: 0 };
  const take = direct.take.bind(direct);
  direct.take = (req, res, app) => {
    // Taken, then either answered or handed to the app (before anything is sent).
    const taken = take(req, res, (...handedOver) => {
      counter.count--;
      app(...handedOver);
    });
    if (taken) counter.count++;
    return taken;
  };
  return counter;
}

function withoutRequestId(a: RawAnswer): RawAnswer {
  const { 'x-request-id': id, ...headers } = a.headers;
  assert.match(id ?? '', /^[0-9a-f-]{36}$/);
  const body = a.body.replace(id!, '<request id>');
  return { status: a.status, headers, body };
}

async function startWithLog(t: TestContext): Promise<{ till: TestTill; lines: Record<string, unknown>[]; store: TestStore; invoiceId: string }> {
  const { logger, lines } = capturedLogger();
  const till = await startTestTill(t, { logger });
  const store = setupStore(till);
  const invoiceId = (await postInvoice(till, store.key, { amount_sats: 5000 })).body.id;
  return { till, lines, store, invoiceId };
}

describe('direct GETs', () => {
  test('answer as the app does: same status, headers and body, and the same log line', async (t) => {
    const { till, lines, store, invoiceId } = await startWithLog(t);
    const auth = ['authorization', `Bearer ${store.key}`];
    const paths: [string, string[]][] = [
      [`/pay/invoices/${invoiceId}`, []],
      [`/v1/invoices/${invoiceId}`, auth],
      ['/v1/invoices?limit=5&status=pending', auth],
    ];
    for (const [path, headers] of paths) {
      // The first request fills the caches through the app; then both sides answer.
      await rawGet(till, path, headers);
      const direct = countDirectAnswers(till);
      const fromNode = await rawGet(till, path, headers);
      assert.equal(direct.count, 1, `${path} was answered directly`);
      // The same request through h3: its HEAD and a spelling URL parsing rewrites go there.
      const fromApp = await till.app.request(path, { headers: headers.length ? { [headers[0]!]: headers[1]! } : {} });
      const appHeaders: Record<string, string> = {};
      fromApp.headers.forEach((v, k) => (appHeaders[k] = v));
      const appAnswer = { status: fromApp.status, headers: appHeaders, body: await fromApp.text() };
      const { 'content-length': length, ...nodeHeaders } = withoutRequestId(fromNode).headers;
      assert.equal(Number(length), Buffer.byteLength(fromNode.body));
      assert.deepEqual({ ...withoutRequestId(fromNode), headers: nodeHeaders }, withoutRequestId(appAnswer), path);
      assert.equal(fromNode.status, 200);

      const line = lines.findLast((l) => l.msg === 'request' && l.req_id === fromNode.headers['x-request-id']);
      assert.ok(line, `${path} wrote its request log line`);
      assert.equal(line.method, 'GET');
      assert.equal(line.path, path.split('?')[0]);
      assert.equal(line.status, 200);
      assert.equal(typeof line.ms, 'number');
      assert.equal(line.key_id, headers.length ? store.keyId : undefined);
      assert.ok(!JSON.stringify(line).includes(store.key), 'the API key is never logged');
    }
  });

  test('leave every other request to the app, which answers it in full', async (t) => {
    const { till, store, invoiceId } = await startWithLog(t);
    const auth = ['authorization', `Bearer ${store.key}`];
    await rawGet(till, `/v1/invoices/${invoiceId}`, auth);
    await rawGet(till, `/pay/invoices/${invoiceId}`);
    const direct = countDirectAnswers(till);
    const cases: { path: string; headers?: string[]; method?: string; status: number; code?: string }[] = [
      // Errors: the envelope, from the app.
      { path: `/v1/invoices/${invoiceId}`, status: 401, code: 'api_key_invalid' },
      { path: `/v1/invoices/${invoiceId}`, headers: ['authorization', 'Bearer svc_test_nope'], status: 401, code: 'api_key_invalid' },
      // Two Authorization headers: Node would keep the first, the app sees both and refuses.
      { path: `/v1/invoices/${invoiceId}`, headers: [...auth, ...auth], status: 401, code: 'api_key_invalid' },
      { path: '/v1/invoices?limit=0', headers: auth, status: 400, code: 'validation_error' },
      { path: '/v1/invoices?colour=red', headers: auth, status: 400, code: 'validation_error' },
      { path: '/pay/invoices/inv_00000000000000000000000000', status: 404, code: 'not_found' },
      // An escaped spelling: the app decodes it to the same invoice. A dot segment is no route (a proxy's prefix stays the boundary).
      { path: `/pay/invoices/${invoiceId.replace('_', '%5F')}`, status: 200 },
      { path: `/pay/invoices/./${invoiceId}`, status: 404, code: 'not_found' },
      // Other methods: HEAD answers like GET without a body, OPTIONS is the CORS preflight.
      { path: `/pay/invoices/${invoiceId}`, method: 'HEAD', status: 200 },
      { path: `/pay/invoices/${invoiceId}`, method: 'OPTIONS', status: 204 },
      { path: `/v1/invoices/${invoiceId}`, headers: auth, method: 'DELETE', status: 405, code: 'method_not_allowed' },
    ];
    for (const c of cases) {
      const before = direct.count;
      const res = await rawGet(till, c.path, c.headers, c.method);
      const label = `${c.method ?? 'GET'} ${c.path} ${c.headers?.length ?? 0}`;
      assert.equal(res.status, c.status, label);
      assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/, label);
      if (c.code) assert.equal(JSON.parse(res.body).error.code, c.code, label);
      if (c.path.startsWith('/pay/')) assert.equal(res.headers['access-control-allow-origin'], '*', label);
      if (c.status === 200 && c.method !== 'HEAD') assert.equal(JSON.parse(res.body).id, invoiceId, label);
      assert.equal(direct.count, before, `${label} was left to the app`);
    }
  });

  test('requests read in the same turn are answered together, each as it would be alone', async (t) => {
    const { till, store, invoiceId } = await startWithLog(t);
    const other = setupStore(till, { label: 'other' });
    const auth = ['authorization', `Bearer ${store.key}`];
    await rawGet(till, `/v1/invoices/${invoiceId}`, auth);
    const direct = countDirectAnswers(till);
    const cases: { path: string; headers?: string[]; status: number; code?: string }[] = [];
    for (let i = 0; i < 8; i++) {
      cases.push({ path: `/v1/invoices/${invoiceId}`, headers: auth, status: 200 });
      cases.push({ path: `/pay/invoices/${invoiceId}`, status: 200 });
      cases.push({ path: `/v1/invoices/${invoiceId}`, headers: ['authorization', `Bearer ${other.key}`], status: 404, code: 'not_found' });
      cases.push({ path: `/v1/invoices/${invoiceId}`, status: 401, code: 'api_key_invalid' });
    }
    // One socket each, all sent at once: the server reads many of them in one turn.
    const answers = await Promise.all(cases.map((c) => rawGet(till, c.path, c.headers)));
    answers.forEach((res, i) => {
      const c = cases[i]!;
      assert.equal(res.status, c.status, `${i}: ${c.path}`);
      if (c.code) assert.equal(JSON.parse(res.body).error.code, c.code);
      else assert.equal(JSON.parse(res.body).id, invoiceId);
    });
    assert.equal(direct.count, 16, 'the 200s were answered directly, the errors by the app');
  });

  test('a change shows in the very next direct answer', async (t) => {
    const { till, store, invoiceId } = await startWithLog(t);
    const auth = ['authorization', `Bearer ${store.key}`];
    const direct = countDirectAnswers(till);
    assert.equal(JSON.parse((await rawGet(till, `/pay/invoices/${invoiceId}`)).body).status, 'pending');
    assert.equal(JSON.parse((await rawGet(till, `/v1/invoices/${invoiceId}`, auth)).body).status, 'pending');
    await till.request(`/v1/invoices/${invoiceId}/simulate`, {
      method: 'POST',
      headers: { authorization: `Bearer ${store.key}`, 'content-type': 'application/json' },
      body: '{"event":"paid"}',
    });
    assert.equal(JSON.parse((await rawGet(till, `/pay/invoices/${invoiceId}`)).body).status, 'paid');
    assert.equal(JSON.parse((await rawGet(till, `/v1/invoices/${invoiceId}`, auth)).body).status, 'paid');
    assert.equal(JSON.parse((await rawGet(till, '/v1/invoices', auth)).body).data[0].status, 'paid');
    assert.equal(direct.count, 5);
  });

  test('an answer that cannot be written cuts its connection and is logged as our bug; the turn\'s other answers and the process go on', async (t) => {
    const bugs: unknown[] = [];
    const gets = new DirectGets(() => {}, (read) => read(), (err) => bugs.push(err));
    gets.get('/broken', { headers: { 'x-broken': 'a\nb' }, answer: () => '{}' });
    gets.get('/fine', { answer: () => '{"fine":true}' });
    const server = http.createServer((req, res) => void (gets.take(req, res, (_req, r) => r.end('not taken')) || res.end('not taken')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const { port } = server.address() as { port: number };
    const url = `http://127.0.0.1:${port}`;
    const [broken, fine] = await Promise.all([
      rawExchange(url, Buffer.from('GET /broken HTTP/1.1\r\nHost: x\r\n\r\n')),
      rawExchange(url, Buffer.from('GET /fine HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')),
    ]);
    assert.deepEqual([broken.answers.length, broken.closed], [0, true], 'no answer, the connection cut');
    assert.equal(String(fine.answers[0]?.body), '{"fine":true}');
    assert.equal(bugs.length, 1);
    assert.match(String(bugs[0]), /Invalid character in header content/);
  });
});
