// The error envelope (spec 7, DESIGN "Errors") on every kind of bad request,
// never a 500, and X-Request-Id on every response, success included. The
// requests Node's HTTP parser sees first are sent byte for byte on a raw socket.
import assert from 'node:assert/strict';
import { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { queryObjects } from 'node:v8';
import { describe, test } from 'node:test';
import { MAX_OWED_ANSWERS } from '../../../src/http/server.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestTill } from '../../helpers/till-server.ts';
import { assertError, assertInvoice, assertRequestId, assertWritesNothing, postInvoice, useTill, type ApiResult } from './invoice-api.ts';

const LIMIT = 64 * 1024;

/** A JSON object body of exactly `bytes` bytes: a valid invoice plus an unknown filler field. */
function bodyOfSize(bytes: number): string {
  const head = '{"amount_sats":1000,"filler":"';
  const tail = '"}';
  return head + 'x'.repeat(bytes - head.length - tail.length) + tail;
}

async function send(till: TestTill, method: string, path: string, key: string | undefined, body: BodyInit | undefined, headers: Record<string, string> = {}): Promise<ApiResult> {
  const res = await till.request(path, { method, body, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON; the assertion shows the text
  }
  return { status: res.status, headers: res.headers, text, body: parsed };
}

for (const transport of TRANSPORTS) {
  describe(`error envelope (${transport})`, () => {
    const till = useTill({ transport });
    let key = '';
    let invoiceId = '';
    test('setup', async () => {
      key = setupStore(till()).key;
      invoiceId = assertInvoice(await postInvoice(till(), key, { amount_sats: 1000 })).id;
    });

    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/nope'],
      ['POST', '/v1/nope'],
      ['GET', '/v2/invoices'],
      ['GET', '/v1/invoices/inv_x/cancel/again'],
      ['GET', '/v1/invoices/%zz/%'],
    ]) {
      test(`unknown route ${method} ${path} -> 404 not_found`, async () => {
        assertError(await call(till(), method!, path!, { key }), 404, 'not_found');
        assertError(await call(till(), method!, path!), 404, 'not_found');
      });
    }

    test('a route that takes no query parameter refuses one, named, and changes nothing', async () => {
      const storeId = till().rt.ctx.repos.invoices.get(invoiceId)!.storeId;
      for (const [method, path] of [
        ['GET', `/v1/invoices/${invoiceId}?expand=payments`],
        ['POST', `/v1/invoices/${invoiceId}/cancel?expand=payments`],
        ['GET', `/v1/stores/${storeId}/webhooks?expand=payments`],
      ]) {
        const res = await call(till(), method!, path!, { key });
        assert.equal(assertError(res, 400, 'validation_error').param, 'expand', `${method} ${path}`);
      }
      assert.equal(till().rt.ctx.repos.invoices.get(invoiceId)!.status, 'pending', 'not cancelled');
      // An empty query is no parameter.
      assert.equal((await call(till(), 'GET', `/v1/invoices/${invoiceId}?`, { key })).status, 200);
    });

    for (const [method, path, allow] of [
      ['DELETE', '/v1/invoices', 'POST, GET, HEAD'],
      ['PUT', '/v1/invoices', 'POST, GET, HEAD'],
      ['POST', '/v1/invoices/{id}', 'GET, HEAD'],
      ['DELETE', '/v1/invoices/{id}', 'GET, HEAD'],
      ['GET', '/v1/invoices/{id}/cancel', 'POST'],
      ['PATCH', '/v1/invoices/{id}/simulate', 'POST'],
      ['OPTIONS', '/v1/invoices', 'POST, GET, HEAD'],
    ]) {
      test(`${method} ${path} -> 405 method_not_allowed, Allow: ${allow}`, async () => {
        const res = await assertWritesNothing(till(), () => call(till(), method!, path!.replace('{id}', invoiceId), { key }));
        assertError(res, 405, 'method_not_allowed');
        assert.equal(res.headers.get('allow'), allow);
      });
    }

    test('HEAD is answered where GET is', async () => {
      for (const path of ['/v1/invoices', `/v1/invoices/${invoiceId}`]) {
        const res = await send(till(), 'HEAD', path, key, undefined);
        assert.equal(res.status, 200);
        assertRequestId(res);
        if (transport === 'socket') assert.equal(res.text, '');
      }
    });

    // `says`: what the message tells, where another check would give the same code and param.
    const badBodies: Array<{ name: string; body: BodyInit | undefined; type?: string; status: number; code: string; param?: string; says?: RegExp }> = [
      { name: 'malformed JSON', body: '{"amount_sats":', type: 'application/json', status: 400, code: 'validation_error', param: 'body', says: /not valid JSON/ },
      { name: 'trailing garbage', body: '{"amount_sats":1000} x', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'empty body', body: '', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'no body', body: undefined, type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'JSON array', body: '[{"amount_sats":1000}]', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'JSON null', body: 'null', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'JSON string', body: '"amount_sats"', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'JSON number', body: '1000', type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'invalid UTF-8', body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), type: 'application/json', status: 400, code: 'validation_error', param: 'body', says: /not valid UTF-8/ },
      { name: 'a lone UTF-16 surrogate in UTF-8 (CESU)', body: new Uint8Array([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]), type: 'application/json', status: 400, code: 'validation_error', param: 'body' },
      { name: 'nested 20,000 deep', body: `{"amount_sats":1,"metadata":{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`, type: 'application/json', status: 400, code: 'validation_error', param: 'body', says: /nested more than 32 levels/ },
      // The body, metadata and 30 arrays: 32 levels, the most taken, so judged as a body (a value must be a string).
      { name: 'nested 32 deep', body: `{"amount_sats":1,"metadata":{"a":${'['.repeat(30)}${']'.repeat(30)}}}`, type: 'application/json', status: 400, code: 'validation_error', param: 'metadata.a' },
      { name: 'nested 33 deep', body: `{"amount_sats":1,"metadata":{"a":${'['.repeat(31)}${']'.repeat(31)}}}`, type: 'application/json', status: 400, code: 'validation_error', param: 'body', says: /nested more than 32 levels/ },
      { name: 'a field twice (JSON.parse keeps the last)', body: '{"amount_sats":100,"amount_sats":200}', type: 'application/json', status: 400, code: 'validation_error', param: 'amount_sats' },
      { name: 'a metadata key twice', body: '{"amount_sats":100,"metadata":{"order":"1","order":"2"}}', type: 'application/json', status: 400, code: 'validation_error', param: 'metadata.order' },
      { name: 'a 5,000-character name twice: named by its first 64', body: `{"${'x'.repeat(5000)}":1,"${'x'.repeat(5000)}":2}`, type: 'application/json', status: 400, code: 'validation_error', param: 'x'.repeat(64) },
      { name: 'text/plain', body: '{"amount_sats":1000}', type: 'text/plain', status: 415, code: 'unsupported_media_type' },
      { name: 'form encoded', body: 'amount_sats=1000', type: 'application/x-www-form-urlencoded', status: 415, code: 'unsupported_media_type' },
      { name: 'application/jsonx', body: '{"amount_sats":1000}', type: 'application/jsonx', status: 415, code: 'unsupported_media_type' },
      { name: 'x-application/json', body: '{"amount_sats":1000}', type: 'x-application/json', status: 415, code: 'unsupported_media_type' },
      { name: 'no Content-Type', body: new TextEncoder().encode('{"amount_sats":1000}'), status: 415, code: 'unsupported_media_type' },
      { name: `${LIMIT + 1} bytes`, body: bodyOfSize(LIMIT + 1), type: 'application/json', status: 413, code: 'payload_too_large' },
      { name: '1 MiB', body: bodyOfSize(2 ** 20), type: 'application/json', status: 413, code: 'payload_too_large' },
      // Exactly the limit is read and judged: the filler field is unknown.
      { name: `exactly ${LIMIT} bytes`, body: bodyOfSize(LIMIT), type: 'application/json', status: 400, code: 'validation_error', param: 'filler' },
    ];
    for (const b of badBodies) {
      test(`POST /v1/invoices with ${b.name} -> ${b.status} ${b.code}`, async () => {
        const res = await assertWritesNothing(till(), () => send(till(), 'POST', '/v1/invoices', key, b.body, b.type ? { 'content-type': b.type } : {}));
        const error = assertError(res, b.status, b.code, b.param);
        if (b.says) assert.match(String(error.message), b.says);
      });
    }

    test('the Content-Type may carry a charset and any case', async () => {
      for (const type of ['application/json; charset=utf-8', 'Application/JSON', 'application/json;charset=UTF-8']) {
        assertInvoice(await send(till(), 'POST', '/v1/invoices', key, '{"amount_sats":1000}', { 'content-type': type }));
      }
    });

    test('the key is checked before the body is read: no key and a bad body -> 401', async () => {
      assertError(await send(till(), 'POST', '/v1/invoices', undefined, bodyOfSize(LIMIT + 1), { 'content-type': 'text/plain' }), 401, 'api_key_invalid');
    });

    test('X-Request-Id on every success, a fresh UUID each time', async () => {
      const results = [
        await postInvoice(till(), key, { amount_sats: 1000 }, { 'idempotency-key': 'rid' }),
        await postInvoice(till(), key, { amount_sats: 1000 }, { 'idempotency-key': 'rid' }),
        await call(till(), 'GET', '/v1/invoices', { key }),
        await call(till(), 'GET', `/v1/invoices/${invoiceId}`, { key }),
        await call(till(), 'POST', `/v1/invoices/${invoiceId}/simulate`, { key, body: { event: 'payment_detected' } }),
        await call(till(), 'POST', `/v1/invoices/${invoiceId}/cancel`, { key }),
        await call(till(), 'GET', '/healthz'),
      ];
      for (const res of results) assert.ok(res.status === 200 || res.status === 201, res.text.slice(0, 200));
      const ids = results.map(assertRequestId);
      assert.equal(new Set(ids).size, ids.length);
    });

    test('a client X-Request-Id does not replace the server one', async () => {
      const res = await call(till(), 'GET', '/v1/nope', { headers: { 'x-request-id': 'client-chosen' } });
      assert.notEqual(assertError(res, 404, 'not_found').request_id, 'client-chosen');
    });
  });
}

/** One request written byte for byte; resolves with the first response, parsed. */
function rawRequest(url: string, bytes: Buffer | string, timeoutMs = 5000): Promise<ApiResult> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`no complete response within ${timeoutMs} ms: ${received.toString('latin1').slice(0, 300)}`)), timeoutMs);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
    };
    socket.on('error', () => {}); // the server may close while we still write; the answer is what counts
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parseResponse(received);
      if (parsed) {
        finish();
        resolve(parsed);
      }
    });
    socket.on('close', () => finish(new Error(`closed without a complete response: ${received.toString('latin1').slice(0, 300)}`)));
    socket.write(bytes);
  });
}

/** An HTTP/1.1 response from its bytes, or null while incomplete (Content-Length or chunked bodies). */
function parseResponse(bytes: Buffer): ApiResult | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const headers = new Headers(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
  let rest = bytes.subarray(end + 4);
  let body: Buffer;
  if (headers.get('transfer-encoding') === 'chunked') {
    const chunks: Buffer[] = [];
    for (;;) {
      const eol = rest.indexOf('\r\n');
      if (eol < 0) return null;
      const size = parseInt(rest.subarray(0, eol).toString('latin1'), 16);
      if (rest.length < eol + 2 + size + 2) return null;
      if (size === 0) break;
      chunks.push(rest.subarray(eol + 2, eol + 2 + size));
      rest = rest.subarray(eol + 2 + size + 2);
    }
    body = Buffer.concat(chunks);
  } else {
    const length = Number(headers.get('content-length') ?? NaN);
    if (!(rest.length >= length)) return null;
    body = rest.subarray(0, length);
  }
  const text = body.toString('utf8');
  return { status: Number(statusLine!.split(' ')[1]), headers, text, body: JSON.parse(text) };
}

describe('bodies Node parses first, on a raw socket (socket)', () => {
  const till = useTill();
  let key = '';
  const head = (extra: string) =>
    `POST /v1/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${extra}\r\n`;
  const chunked = (body: string, chunkSize = 8192) => {
    let out = '';
    for (let i = 0; i < body.length; i += chunkSize) {
      const part = body.slice(i, i + chunkSize);
      out += `${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`;
    }
    return `${out}0\r\n\r\n`;
  };

  test('setup', () => {
    key = setupStore(till()).key;
  });

  test('a small chunked body without Content-Length creates the invoice', async () => {
    const res = await rawRequest(till().url, head('Transfer-Encoding: chunked\r\nConnection: close\r\n') + chunked('{"amount_sats":1000}', 5));
    assertInvoice(res);
  });

  test('a chunked body over 64 KiB without Content-Length -> 413 payload_too_large', async () => {
    const res = await assertWritesNothing(till(), () =>
      rawRequest(till().url, head('Transfer-Encoding: chunked\r\nConnection: close\r\n') + chunked(bodyOfSize(LIMIT + 1))),
    );
    assertError(res, 413, 'payload_too_large');
  });

  test('a declared Content-Length over 64 KiB -> 413 at once, without waiting for the body', async () => {
    const res = await assertWritesNothing(till(), () => rawRequest(till().url, head(`Content-Length: ${LIMIT + 1}\r\n`) + '{"amount_sats":', 2000));
    assertError(res, 413, 'payload_too_large');
  });

  test('Content-Length beside Transfer-Encoding: chunked -> 400 validation_error envelope', async () => {
    const res = await assertWritesNothing(till(), () =>
      rawRequest(till().url, head('Content-Length: 5\r\nTransfer-Encoding: chunked\r\n') + chunked('{"amount_sats":1000}')),
    );
    assertError(res, 400, 'validation_error');
  });

  test('a Content-Length shorter than the body -> 400 validation_error envelope', async () => {
    const res = await assertWritesNothing(till(), () => rawRequest(till().url, head('Content-Length: 10\r\n') + bodyOfSize(LIMIT + 1)));
    assertError(res, 400, 'validation_error');
  });

  test('an h2c upgrade offer (curl --http2) is ignored: the invoice is created from the body', async () => {
    const body = '{"amount_sats":1000}';
    const res = await rawRequest(
      till().url,
      head(`Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nContent-Length: ${body.length}\r\n`) + body,
    );
    assertInvoice(res);
  });

  test('HTTP/1.1 without Host -> 400 validation_error envelope, on the direct GET path too', async () => {
    for (const request of [`GET /v1/invoices/inv_01m7yrrt80xqdbztbykwnv04zp HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n\r\n`, 'GET /healthz HTTP/1.1\r\n\r\n']) {
      const res = await rawRequest(till().url, request);
      assertError(res, 400, 'validation_error');
      assert.match(res.body.error.message, /Host/);
    }
    // HTTP/1.0 does not require it.
    assert.equal((await rawRequest(till().url, 'GET /healthz HTTP/1.0\r\n\r\n')).status, 200);
  });

  test('HTTP/1.1 without Host under /pay/ -> the 400 a page can read (Access-Control-Allow-Origin: *)', async () => {
    for (const path of ['/pay/invoices/inv_01m7yrrt80xqdbztbykwnv04zp', '/pay/invoices/inv_01m7yrrt80xqdbztbykwnv04zp/events']) {
      const res = await rawRequest(till().url, `GET ${path} HTTP/1.1\r\n\r\n`);
      assertError(res, 400, 'validation_error');
      assert.equal(res.headers.get('access-control-allow-origin'), '*', path);
    }
  });

  test('an Expect other than 100-continue is ignored, not a bare 417', async () => {
    const body = '{"amount_sats":1000}';
    assertInvoice(await rawRequest(till().url, head(`Expect: 200-ok\r\nContent-Length: ${body.length}\r\n`) + body));
  });

  test('a checkout request Node refuses (headers over 16 KiB) -> 400 envelope a page can read (Access-Control-Allow-Origin: *)', async () => {
    const res = await rawRequest(till().url, `GET /pay/invoices/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertError(res, 400, 'validation_error');
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
  });

  test('a creation whose body stalls: 400 "not received in time" once the request deadline passes, nothing written; one log line, as the client saw it', async (t) => {
    const { logger, lines } = capturedLogger();
    const own = await startTestTill(t, { deadlines: { headersMs: 300, requestMs: 600 }, logger });
    const ownKey = setupStore(own).key;
    const stalled = `POST /v1/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ownKey}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"amount_sats":`;
    const text = await assertWritesNothing(own, () => rawConversation(own.url, stalled));
    assert.deepEqual(statusCodes(text), [400]);
    assert.match(text, /"code":"validation_error".*not received in time/);
    // The app's own answer to the body it lost goes nowhere: give it the time to (not) log one.
    await new Promise((r) => setTimeout(r, 50));
    const requestId = /X-Request-Id: ([0-9a-f-]{36})/.exec(text)?.[1];
    const logged = lines.filter((l) => l.msg === 'request').map((l) => [l.method, l.path, l.status, l.req_id === requestId]);
    assert.deepEqual(logged, [['POST', '/v1/invoices', 400, true]]);
  });

  test('a request answered before its body is in (413, 401) whose body then stalls: that one answer, then the connection closes', async (t) => {
    const own = await startTestTill(t, { deadlines: { headersMs: 300, requestMs: 600 } });
    const ownKey = setupStore(own).key;
    for (const [auth, length, expected] of [[ownKey, LIMIT + 1, 413], ['svc_test_wrong', 20, 401]] as const) {
      const stalled = `POST /v1/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"amount_sats":`;
      const text = await rawConversation(own.url, stalled);
      assert.deepEqual(statusCodes(text), [expected], text);
    }
    // Its body complete after all, the connection's next request is a new one: a malformed one gets its envelope.
    const whole = `POST /v1/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer svc_test_wrong\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"amount_sats":1000}`;
    const next = 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n';
    let rest: string | null = `${whole.slice(-5)}${next}`;
    const text = await rawConversation(own.url, whole.slice(0, -5), (got) => {
      if (!got.includes('HTTP/1.1 401')) return null;
      const send = rest;
      rest = null;
      return send;
    });
    assert.deepEqual(statusCodes(text), [401, 400], text);
  });

  test('a request-target Node lets through but that is no path or http(s) URL (*?, *%, ftp://x/) -> 400 validation_error envelope, not a bare 400', async () => {
    for (const target of ['*?', '*%', 'ftp://x/']) {
      const res = await assertWritesNothing(till(), () => rawRequest(till().url, head('Content-Length: 20\r\n').replace('/v1/invoices', target) + '{"amount_sats":1000}'));
      assertError(res, 400, 'validation_error');
    }
  });

  test('CONNECT (a proxy\'s method) -> 400 validation_error envelope, not a connection closed unanswered', async () => {
    for (const target of ['example.com:443', '127.0.0.1:22']) {
      const res = await rawRequest(till().url, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      assertError(res, 400, 'validation_error');
      assert.match(res.body.error.message, /not a proxy/);
    }
  });

  test('a Host no URL can hold (port 99999) -> 400 validation_error envelope (RFC 9112 3.2), also with a path the URL parser rewrites (was a bare 500)', async () => {
    for (const path of ['/healthz', '/healthz\\x', '/v1/invoices/../invoices']) {
      const res = await rawRequest(till().url, `GET ${path} HTTP/1.1\r\nHost: example.com:99999\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      assertError(res, 400, 'validation_error');
      assert.match(res.body.error.message, /Host/);
    }
  });

  test('a malformed chunk size -> 400 validation_error envelope', async () => {
    const res = await assertWritesNothing(till(), () => rawRequest(till().url, head('Transfer-Encoding: chunked\r\n') + 'zz\r\n{}\r\n0\r\n\r\n'));
    assertError(res, 400, 'validation_error');
  });

  test('on a keep-alive connection, a malformed request after an answered one still gets the envelope, and is logged', async (t) => {
    const { logger, lines } = capturedLogger();
    const own = await startTestTill(t, { logger });
    const text = await rawConversation(own.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', (got) =>
      // The first answer is complete: now the malformed request, on the same connection.
      /^HTTP\/1\.1 200[\s\S]*\r\n\r\n\{[\s\S]*\}$/.test(got) ? 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' : null,
    );
    // The second status line follows the first body directly.
    assert.deepEqual(statusCodes(text), [200, 400]);
    const requestId = /X-Request-Id: ([0-9a-f-]{36})/.exec(text.slice(text.lastIndexOf('HTTP/1.1 400')))?.[1];
    assert.ok(requestId, 'the 400 carries a request id');
    assert.match(text, new RegExp(`"request_id":"${requestId}"`));
    const logged = lines.filter((l) => l.msg === 'request').map((l) => [l.status, l.req_id === requestId]);
    assert.deepEqual(logged, [[200, false], [400, true]]);
  });

  test('a malformed request pipelined behind a complete one: the first gets its own answer, then the connection closes', async () => {
    const first = head('Content-Length: 20\r\n') + '{"amount_sats":1000}';
    const text = await rawConversation(till().url, `${first}GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    assert.deepEqual(statusCodes(text), [201], 'no 400 the client would read as the creation\'s answer');
  });

  test(`pipelined requests: ${MAX_OWED_ANSWERS} owed on one connection are all answered; a client that sends many more without reading is cut off`, async () => {
    const get = (close = false) => `GET /healthz HTTP/1.1\r\nHost: x\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
    const all = await rawConversation(till().url, get().repeat(MAX_OWED_ANSWERS - 1) + get(true));
    assert.deepEqual(statusCodes(all), Array(MAX_OWED_ANSWERS).fill(200));
    const live = () => queryObjects(ServerResponse, { format: 'count' }) as number;
    const before = live();
    const flood = await rawConversation(till().url, get().repeat(200) + get(true));
    assert.ok(statusCodes(flood).length < 201, `all ${statusCodes(flood).length} pipelined requests were answered: the server would owe any number`);
    // The cut connection's refused requests leave nothing behind (a full GC runs before the count).
    await new Promise((r) => setImmediate(r));
    assert.ok(live() - before < MAX_OWED_ANSWERS, `${live() - before} responses still held after the connection was cut`);
    assert.equal((await call(till(), 'GET', '/healthz')).status, 200, 'the server goes on');
  });

  test('a keep-alive connection serves the next request after a 413', async () => {
    const first = head('Transfer-Encoding: chunked\r\n') + chunked(bodyOfSize(LIMIT + 100));
    const second = head('Content-Length: 20\r\nConnection: close\r\n') + '{"amount_sats":1000}';
    const text = await rawConversation(till().url, first + second);
    assert.deepEqual(statusCodes(text), [413, 201]);
  });
});
