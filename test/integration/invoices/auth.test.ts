// API key authentication of the invoice routes (spec 5, 7.1) and the store
// conditions checked with it: archived store, missing xpub, gap limit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../../src/auth/api-keys.ts';
import { mintApiKey, revokeApiKey } from '../../../src/services/api-keys.ts';
import { archiveStore, updateStore } from '../../../src/services/stores.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { runTillBeside } from '../../helpers/cli.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestTill } from '../../helpers/till-server.ts';
import { assertError, assertInvoice, assertWritesNothing, nextIndex, postInvoice, useTill, type ApiResult } from './invoice-api.ts';

const HOUR = 60 * 60 * 1000;

/** Every authenticated invoice route, as the given Authorization header sees it. */
function everyRoute(till: TestTill, authorization: string | undefined, invoiceId: string): Promise<ApiResult>[] {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  return [
    call(till, 'POST', '/v1/invoices', { headers, body: { amount_sats: 1000 } }),
    call(till, 'GET', '/v1/invoices', { headers }),
    call(till, 'GET', `/v1/invoices/${invoiceId}`, { headers }),
    call(till, 'POST', `/v1/invoices/${invoiceId}/cancel`, { headers }),
    call(till, 'POST', `/v1/invoices/${invoiceId}/simulate`, { headers, body: { event: 'paid' } }),
  ];
}

for (const transport of TRANSPORTS) {
  describe(`API key authentication (${transport})`, () => {
    const till = useTill({ transport });

    // The message tells a missing key, a malformed one and an unknown one apart.
    const badHeaders: Array<{ name: string; header: string | undefined; says?: RegExp }> = [
      { name: 'missing Authorization', header: undefined, says: /Bearer <API key> is required/ },
      { name: 'empty Authorization', header: '', says: /Bearer <API key> is required/ },
      { name: 'Bearer without a key', header: 'Bearer ' },
      { name: 'malformed key', header: 'Bearer svc_test_short', says: /malformed/ },
      { name: 'a key with a character too many', header: `Bearer ${generateApiKey('test')}x`, says: /malformed/ },
      { name: 'a key after a stray character', header: `Bearer x${generateApiKey('test')}`, says: /malformed/ },
      { name: 'unknown prefix', header: `Bearer sk_test_${'a'.repeat(32)}`, says: /malformed/ },
      { name: 'unknown well-formed key', header: `Bearer ${generateApiKey('test')}`, says: /not known/ },
      { name: 'Basic scheme', header: `Basic ${Buffer.from('svc_test_x:').toString('base64')}` },
      { name: 'key without a scheme', header: generateApiKey('test') },
      { name: 'two keys', header: `Bearer ${generateApiKey('test')} ${generateApiKey('test')}` },
    ];
    for (const b of badHeaders) {
      test(`${b.name} -> 401 api_key_invalid on every route`, async () => {
        const s = setupStore(till());
        const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
        // A real key's invoice, asked for without it: still 401, never a leak.
        const results = await assertWritesNothing(till(), () => Promise.all(everyRoute(till(), b.header, inv.id)));
        for (const res of results) {
          const error = assertError(res, 401, 'api_key_invalid');
          if (b.says) assert.match(String(error.message), b.says);
          assert.equal(res.headers.get('www-authenticate'), 'Bearer', 'RFC 9110: a 401 names its scheme');
        }
      });
    }

    test('the key in the header is case-sensitive, the scheme is not', async () => {
      const s = setupStore(till());
      const ok = await call(till(), 'GET', '/v1/invoices', { headers: { authorization: `bearer ${s.key}` } });
      assert.equal(ok.status, 200);
      assert.equal(ok.body.object, 'list');
      const flipped = s.key.slice(0, -1) + (s.key.endsWith('a') ? 'A' : 'a');
      assertError(await call(till(), 'GET', '/v1/invoices', { headers: { authorization: `Bearer ${flipped}` } }), 401, 'api_key_invalid');
    });

    test('the real key in another scheme, or with more after it, is refused; spaces between scheme and key are not', async () => {
      const s = setupStore(till());
      const list = (authorization: string) => call(till(), 'GET', '/v1/invoices', { headers: { authorization } });
      assert.equal((await list(`Bearer   ${s.key}`)).status, 200);
      for (const authorization of [`XBearer ${s.key}`, `Basic ${s.key}`, `Bearer ${s.key} ${s.key}`, `Bearer ${s.key}x`, `Bearer x${s.key}`]) {
        assertError(await list(authorization), 401, 'api_key_invalid');
      }
    });

    test('revoked through the service while the server runs -> 401 api_key_revoked, other keys unaffected', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      const other = mintApiKey(till().rt.ctx, s.storeId, 'test');
      revokeApiKey(till().rt.ctx, s.keyId);
      const results = await assertWritesNothing(till(), () => Promise.all(everyRoute(till(), `Bearer ${s.key}`, inv.id)));
      for (const res of results) assertError(res, 401, 'api_key_revoked');
      const fetched = await call(till(), 'GET', `/v1/invoices/${inv.id}`, { key: other.key });
      assert.equal(fetched.status, 200);
      assert.equal(fetched.body.id, inv.id);
    });

    test('a test key on a store switched to live, and back -> 401 api_key_wrong_env', async () => {
      const s = setupStore(till());
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      updateStore(till().rt.ctx, s.storeId, { mode: 'live' });
      const res = await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 }));
      assert.match(assertError(res, 401, 'api_key_wrong_env').message as string, /test key.*live/);
      assertError(await call(till(), 'GET', '/v1/invoices', { key: s.key }), 401, 'api_key_wrong_env');

      const live = mintApiKey(till().rt.ctx, s.storeId, 'live');
      updateStore(till().rt.ctx, s.storeId, { mode: 'test' });
      const liveRes = await assertWritesNothing(till(), () => postInvoice(till(), live.key, { amount_sats: 1000 }));
      assert.match(assertError(liveRes, 401, 'api_key_wrong_env').message as string, /live key.*test/);
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
    });

    test('archived store -> 404 not_found on every route', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      archiveStore(till().rt.ctx, s.storeId);
      const results = await assertWritesNothing(till(), () => Promise.all(everyRoute(till(), `Bearer ${s.key}`, inv.id)));
      for (const res of results) assertError(res, 404, 'not_found');
    });

    test('no active xpub -> 409 no_active_xpub naming the dashboard page and the CLI command', async () => {
      for (const mode of ['test', 'live'] as const) {
        const s = setupStore(till(), { mode, xpub: null });
        const res = await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 }));
        const message = String(assertError(res, 409, 'no_active_xpub').message);
        assert.ok(message.includes(`/stores/${s.storeId}/xpubs`), message);
        assert.ok(message.includes('till xpub add'), message);
        // Without a dashboard_url the link is Till's own page, which tells the same fix.
        const link = /https?:\/\/\S+\/stores\/\S+\/xpubs/.exec(message)![0];
        const page = await call(till(), 'GET', new URL(link).pathname);
        assert.equal(page.status, 200);
        assert.match(page.headers.get('content-type') ?? '', /^text\/plain/);
        assert.ok(page.text.includes(`till xpub add --store ${s.storeId} --env ${mode} <tpub>`), page.text);
        assert.match(page.text, /live invoices \(tpub, upub, vpub: this Till runs on regtest/, 'the live key forms of this network');
        // Resolved as the message says.
        addXpub(till().rt.ctx, { storeId: s.storeId, env: mode, key: testTpub(`added-${s.storeId}`) });
        assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      }
    });
  });

  describe(`dashboard endpoints (${transport})`, () => {
    const till = useTill({ transport });

    test('POST /v1/stores/:id/test-invoice needs a session (spec 5): 401 auth_required with any key, cookie or store, nothing written', async () => {
      const s = setupStore(till());
      const asked = [
        {},
        { key: s.key },
        { headers: { cookie: 'till_session=made-up' } },
      ];
      for (const storeId of [s.storeId, 'sto_unknown']) {
        for (const options of asked) {
          const res = await assertWritesNothing(till(), () => call(till(), 'POST', `/v1/stores/${storeId}/test-invoice`, { ...options, body: { amount_sats: 1000 } }));
          assert.match(String(assertError(res, 401, 'auth_required').message), /POST \/v1\/invoices/);
        }
      }
      assertError(await call(till(), 'GET', `/v1/stores/${s.storeId}/test-invoice`, { key: s.key }), 405, 'method_not_allowed');
    });
  });

  describe(`gap limit (${transport})`, () => {
    const till = useTill({ transport });

    test('live, gap_limit 20, no funding: 15 invoices in a row, the 16th -> 409 gap_limit_exceeded and no index handed out', async () => {
      const s = setupStore(till(), { mode: 'live' });
      for (let i = 0; i < 15; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      assert.equal(nextIndex(till(), s.storeId, 'live'), 15);
      for (let attempt = 0; attempt < 3; attempt++) {
        const res = await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': `gap-${attempt}` }));
        const message = String(assertError(res, 409, 'gap_limit_exceeded').message);
        assert.match(message, /gap limit \(20\)/);
      }
      assert.equal(nextIndex(till(), s.storeId, 'live'), 15);
    });

    test('funding seen in the last 24 h lets creation past the limit; 24 h later it blocks again', async () => {
      const s = setupStore(till(), { mode: 'live' });
      for (let i = 0; i < 15; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      assertError(await postInvoice(till(), s.key, { amount_sats: 1000 }), 409, 'gap_limit_exceeded');
      const xpub = till().rt.ctx.repos.xpubs.findActive(s.storeId, 'live')!;
      // Index 0 got paid just now: the unfunded run is 14, and funding is recent.
      till().rt.ctx.repos.xpubs.recordFunding(xpub.id, 0, till().clock.now());
      for (let i = 0; i < 4; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      till().clock.advance(24 * HOUR - 1);
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      assert.equal(nextIndex(till(), s.storeId, 'live'), 20);
      till().clock.advance(1);
      const res = await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 }));
      assertError(res, 409, 'gap_limit_exceeded');
    });

    test('funding older than 24 h still moves the window: index 10 funded, 11 more indexes (to 25) before the 409', async () => {
      const s = setupStore(till(), { mode: 'live' });
      for (let i = 0; i < 15; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      const xpub = till().rt.ctx.repos.xpubs.findActive(s.storeId, 'live')!;
      till().rt.ctx.repos.xpubs.recordFunding(xpub.id, 10, till().clock.now());
      till().clock.advance(25 * HOUR);
      // The run after index 10 may reach 20 - 5 = 15 unfunded indexes: 11 through 25.
      for (let i = 0; i < 11; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      assert.equal(nextIndex(till(), s.storeId, 'live'), 26);
      assertError(await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 })), 409, 'gap_limit_exceeded');
    });

    test('test mode never blocks on the gap limit', async () => {
      const s = setupStore(till(), { mode: 'test' });
      const results = await Promise.all(Array.from({ length: 30 }, () => postInvoice(till(), s.key, { amount_sats: 1000 })));
      for (const res of results) assertInvoice(res);
      assert.equal(nextIndex(till(), s.storeId, 'test'), 30);
    });
  });
}

describe('revoking with the real CLI while the server runs (socket)', () => {
  test('`till keys revoke` -> the running server answers 401 api_key_revoked at once', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    const cli = await runTillBeside(till, ['keys', 'revoke', s.keyId]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, new RegExp(`revoked ${s.keyId}`));
    const res = await assertWritesNothing(till, () => postInvoice(till, s.key, { amount_sats: 1000 }));
    assertError(res, 401, 'api_key_revoked');
  });
});

describe('Authorization sent twice (socket)', () => {
  const till = useTill({ transport: 'socket' });

  test('two Authorization headers -> 401 api_key_invalid saying so, on a write and on a read alike', async () => {
    const s = setupStore(till());
    const body = '{"amount_sats":1000}';
    const twice = `Authorization: Bearer ${s.key}\r\nAuthorization: Bearer ${s.key}\r\n`;
    for (const request of [
      `POST /v1/invoices HTTP/1.1\r\nHost: x\r\n${twice}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      `GET /v1/invoices HTTP/1.1\r\nHost: x\r\n${twice}Connection: close\r\n\r\n`,
    ]) {
      const text = await rawConversation(till().url, request);
      assert.deepEqual(statusCodes(text), [401], text);
      assert.match(text, /"code":"api_key_invalid"/);
      assert.match(text, /"message":"the Authorization header must be given once, with one API key"/);
    }
  });
});

