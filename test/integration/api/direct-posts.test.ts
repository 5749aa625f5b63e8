import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { ApiError } from '../../../src/domain/errors.ts';
import { MAX_JSON_BODY_BYTES } from '../../../src/http/internal/body.ts';
import { DirectPosts } from '../../../src/http/internal/direct-post.ts';
import { directRoutesOf } from '../../../src/http/internal/direct-routes.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { rawExchange } from '../../helpers/raw-http.ts';
import { setupStore, startTestTill, type TestStore, type TestTill } from '../../helpers/till-server.ts';

// POST /v1/invoices is also answered straight from Node's request, ahead of
// srvx and h3, errors included. Whichever side answers, the client must not
// be able to tell: same status, headers, body and log line; and a request
// whose headers are anything but plain is answered by the app in full.

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A POST over its own connection, headers as given (repeats allowed, Host and Connection: close added). */
async function rawPost(till: TestTill, path: string, headers: string[], body: string): Promise<Answer> {
  const head = [`POST ${path} HTTP/1.1`, `Host: ${new URL(till.url).host}`, 'Connection: close', ...headers].join('\r\n');
  const { answers } = await rawExchange(till.url, Buffer.from(`${head}\r\n\r\n${body}`));
  assert.equal(answers.length, 1, `one answer to POST ${path}`);
  const [answer] = answers;
  const kept: Record<string, string> = {};
  for (const [name, values] of answer!.headers) if (name !== 'date' && name !== 'connection') kept[name] = values.join(', ');
  return { status: answer!.status, headers: kept, body: answer!.body.toString('utf8') };
}

/** The same request through h3, in-process. */
async function appPost(till: TestTill, path: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const res = await till.app.request(path, { method: 'POST', headers, body });
  const kept: Record<string, string> = {};
  res.headers.forEach((v, k) => (kept[k] = v));
  return { status: res.status, headers: kept, body: await res.text() };
}

/** Counts the requests the Node-side direct POSTs took (each of them is answered there). */
function countDirectAnswers(till: TestTill): { count: number } {
  const posts = directRoutesOf(till.app)!.posts;
  const counter = { count: 0 };
  const take = posts.take.bind(posts);
  posts.take = (req, res) => {
    const taken = take(req, res);
    if (taken) counter.count++;
    return taken;
  };
  return counter;
}

/** An answer with its request id and length left out, the id checked to be a UUID and the one its body repeats. */
function comparable(a: Answer): Answer {
  const { 'x-request-id': id, 'content-length': length, ...headers } = a.headers;
  assert.match(id ?? '', /^[0-9a-f-]{36}$/);
  if (length !== undefined) assert.equal(Number(length), Buffer.byteLength(a.body));
  return { status: a.status, headers, body: a.body.replaceAll(id!, '<request id>') };
}

async function startWithLog(t: TestContext): Promise<{ till: TestTill; lines: Record<string, unknown>[]; store: TestStore }> {
  const { logger, lines } = capturedLogger();
  const till = await startTestTill(t, { logger });
  return { till, lines, store: setupStore(till) };
}

const JSON_TYPE = 'Content-Type: application/json';

describe('direct POSTs', () => {
  test('answer as the app does, errors included: same status, headers and body, and the same log line', async (t) => {
    const { till, lines, store } = await startWithLog(t);
    // A store without an xpub: 409 no_active_xpub.
    const other = setupStore(till, { xpub: null, label: 'bare' });
    const direct = countDirectAnswers(till);
    const auth = `Bearer ${store.key}`;
    // The first of each keyed pair stores the answer both sides then replay.
    await appPost(till, '/v1/invoices', { authorization: auth, 'content-type': 'application/json', 'idempotency-key': 'replayed' }, '{"amount_sats":700}');
    const cases: { headers: Record<string, string>; body: string; status: number }[] = [
      { headers: { 'Idempotency-Key': 'replayed' }, body: '{"amount_sats":700}', status: 201 },
      { headers: { 'Idempotency-Key': 'replayed' }, body: '{"amount_sats":701}', status: 409 },
      { headers: { 'Idempotency-Key': '' }, body: '{"amount_sats":700}', status: 400 },
      { headers: { Authorization: 'Bearer svc_test_nope' }, body: '{"amount_sats":700}', status: 401 },
      { headers: { Authorization: `Bearer ${other.key}` }, body: '{"amount_sats":700}', status: 409 },
      { headers: {}, body: '{"amount_sats":0}', status: 400 },
      { headers: {}, body: '{"amount_sats":1000', status: 400 },
      { headers: {}, body: '', status: 400 },
      { headers: {}, body: '[1]', status: 400 },
      { headers: {}, body: '{"amount":"1.00","currency":"EUR"}', status: 400 },
      { headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: '{"amount_sats":1,"colour":"red"}', status: 400 },
    ];
    for (const c of cases) {
      const headers: Record<string, string> = { Authorization: auth, 'Content-Type': 'application/json', ...c.headers };
      const before = direct.count;
      const fromNode = await rawPost(till, '/v1/invoices', [...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `Content-Length: ${Buffer.byteLength(c.body)}`], c.body);
      const label = `${JSON.stringify(c.headers)} ${c.body}`;
      assert.equal(direct.count, before + 1, `${label} was answered directly`);
      assert.equal(fromNode.status, c.status, `${label}: ${fromNode.body}`);
      const fromApp = await appPost(till, '/v1/invoices', Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), c.body);
      assert.deepEqual(comparable(fromNode), comparable(fromApp), label);

      const line = lines.findLast((l) => l.msg === 'request' && l.req_id === fromNode.headers['x-request-id']);
      assert.ok(line, `${label} wrote its request log line`);
      assert.deepEqual([line.method, line.path, line.status, typeof line.ms], ['POST', '/v1/invoices', c.status, 'number']);
      assert.equal(line.key_id, c.status === 401 ? undefined : c.headers.Authorization ? other.keyId : store.keyId, label);
      assert.ok(!JSON.stringify(line).includes(store.key), 'the API key is never logged');
    }
  });

  test('a creation answered directly is the app’s creation: 201, the invoice, and the same headers', async (t) => {
    const { till, store } = await startWithLog(t);
    const direct = countDirectAnswers(till);
    const body = '{"amount_sats":5000,"metadata":{"order":"A-1"}}';
    const headers = { authorization: `Bearer ${store.key}`, 'content-type': 'application/json' };
    const fromNode = await rawPost(till, '/v1/invoices', [`Authorization: ${headers.authorization}`, JSON_TYPE, `Content-Length: ${body.length}`], body);
    const fromApp = await appPost(till, '/v1/invoices', headers, body);
    assert.equal(direct.count, 1);
    const node = comparable(fromNode);
    const app = comparable(fromApp);
    assert.deepEqual([node.status, node.headers], [app.status, app.headers]);
    // Two invoices: the same fields, but their own ids, addresses and times.
    const [a, b] = [JSON.parse(node.body), JSON.parse(app.body)];
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.deepEqual([a.object, a.status, a.amount_sats, a.metadata], ['invoice', 'pending', 5000, { order: 'A-1' }]);
    assert.notEqual(a.id, b.id);
    const fetched = await till.request(`/v1/invoices/${a.id}`, { headers: { authorization: headers.authorization } });
    assert.equal(JSON.parse(await fetched.text()).address, a.address, 'the invoice answered directly was written');
  });

  test('leave any request whose headers are not plain to the app, which answers it in full', async (t) => {
    const { till, store } = await startWithLog(t);
    const direct = countDirectAnswers(till);
    const auth = `Authorization: Bearer ${store.key}`;
    const body = '{"amount_sats":1000}';
    const length = `Content-Length: ${body.length}`;
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const cases: { path?: string; headers: string[]; body?: string; status: number; code?: string }[] = [
      // The app refuses a query (fields go in the body) and a type that is not JSON.
      { path: '/v1/invoices?amount_sats=1000', headers: [auth, JSON_TYPE, length], status: 400, code: 'validation_error' },
      { headers: [auth, 'Content-Type: text/plain', length], status: 415, code: 'unsupported_media_type' },
      { headers: [auth, length], status: 415, code: 'unsupported_media_type' },
      // Too large for the limit: refused after the API key, before the body.
      { headers: [auth, JSON_TYPE, `Content-Length: ${MAX_JSON_BODY_BYTES + 1}`], body: ' '.repeat(MAX_JSON_BODY_BYTES + 1), status: 413, code: 'payload_too_large' },
      // Bodies the parser frames otherwise, and Expect.
      { headers: [auth, JSON_TYPE, 'Transfer-Encoding: chunked'], body: chunked, status: 201 },
      { headers: [auth, JSON_TYPE, length, 'Expect: 100-continue'], status: 201 },
      // A header sent twice: Node keeps one, the app sees both.
      { headers: [auth, auth, JSON_TYPE, length], status: 401, code: 'api_key_invalid' },
      { headers: [auth, JSON_TYPE, length, 'Idempotency-Key: a', 'Idempotency-Key: b'], status: 400, code: 'validation_error' },
      { headers: [auth, JSON_TYPE, length, 'X-Trace: 1', 'x-trace: 2'], status: 201 },
      // Paths other than the route's own spelling: h3's router takes a trailing slash as the route, a dot segment is no route.
      { path: '/v1/invoices/', headers: [auth, JSON_TYPE, length], status: 201 },
      { path: '/v1/./invoices', headers: [auth, JSON_TYPE, length], status: 404, code: 'not_found' },
    ];
    for (const c of cases) {
      const label = `${c.path ?? ''} ${c.headers.join(' | ')}`;
      const res = await rawPost(till, c.path ?? '/v1/invoices', c.headers, c.body ?? body);
      assert.equal(res.status, c.status, `${label}: ${res.body}`);
      assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/, label);
      if (c.code) assert.equal(JSON.parse(res.body).error.code, c.code, label);
      else assert.equal(JSON.parse(res.body).object, 'invoice', label);
    }
    assert.equal(direct.count, 0, 'every one was left to the app');
  });

  test('creations sent together are answered together, each as it would be alone', async (t) => {
    const { till, store } = await startWithLog(t);
    const other = setupStore(till, { label: 'other' });
    const direct = countDirectAnswers(till);
    const sends: { key: string; body: string; status: number }[] = [];
    for (let i = 0; i < 8; i++) {
      sends.push({ key: store.key, body: `{"amount_sats":${1000 + i}}`, status: 201 });
      sends.push({ key: other.key, body: `{"amount_sats":${2000 + i}}`, status: 201 });
      sends.push({ key: 'svc_test_nope', body: '{"amount_sats":1000}', status: 401 });
      sends.push({ key: store.key, body: '{"amount_sats":-1}', status: 400 });
    }
    const answers = await Promise.all(
      sends.map((s) => rawPost(till, '/v1/invoices', [`Authorization: Bearer ${s.key}`, JSON_TYPE, `Content-Length: ${s.body.length}`], s.body)),
    );
    answers.forEach((res, i) => {
      const s = sends[i]!;
      assert.equal(res.status, s.status, `${i}: ${res.body}`);
      if (s.status === 201) assert.equal(JSON.parse(res.body).amount_sats, JSON.parse(s.body).amount_sats);
    });
    assert.equal(direct.count, sends.length);
    const ids = answers.filter((a) => a.status === 201).map((a) => JSON.parse(a.body).address);
    assert.equal(new Set(ids).size, 16, 'every creation its own address');
  });

  test('an answer that cannot be written cuts its connection and is logged as our bug; the process goes on', async (t) => {
    const bugs: unknown[] = [];
    const posts = new DirectPosts({ log: () => {}, durable: () => null, errorOf: (err) => (bugs.push(err), new ApiError('internal_error', 'bug')) });
    posts.post('/broken', { answer: async () => ({ status: 200, json: '{}', headers: { 'x-broken': 'a\nb' } }) });
    const server = createServer((req, res) => void (posts.take(req, res) || res.end('not taken')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const { port } = server.address() as { port: number };
    const url = `http://127.0.0.1:${port}`;
    const { answers, closed } = await rawExchange(url, Buffer.from(`POST /broken HTTP/1.1\r\nHost: x\r\n${JSON_TYPE}\r\nContent-Length: 2\r\n\r\n{}`));
    assert.deepEqual([answers.length, closed], [0, true], 'no answer, the connection cut');
    assert.equal(bugs.length, 1);
    assert.match(String(bugs[0]), /Invalid character in header content/);
  });
});
