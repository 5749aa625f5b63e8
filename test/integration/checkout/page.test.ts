import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';
import { createInvoice, receivePayment } from './checkout-helpers.ts';

// The hosted page's files as HTTP sees them; the page itself runs in
// test/browser/checkout.test.ts.

const MISSING_ID = 'inv_00000000000000000000000000';

describe('GET /checkout/:id and its files', () => {
  for (const transport of TRANSPORTS) {
    test(`serves the page with a strict CSP and its files with their types (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = await createInvoice(till, store);

      const page = await call(till, 'GET', `/checkout/${inv.id}`);
      assert.equal(page.status, 200);
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
      const csp = page.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/, 'no inline scripts, no other hosts');
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
      assert.doesNotMatch(page.text, /<script>|<style>|\sstyle=|\son[a-z]+=/i, 'nothing inline for the CSP to block');
      assert.doesNotMatch(page.text, /https?:\/\//, 'no external resource: the page works offline');

      const files: Array<[string, RegExp]> = [
        ['/checkout/assets/checkout.js', /^text\/javascript/],
        ['/checkout/assets/checkout.css', /^text\/css/],
        ['/checkout/assets/favicon.svg', /^image\/svg\+xml/],
      ];
      for (const [path, type] of files) {
        const res = await call(till, 'GET', path);
        assert.equal(res.status, 200, path);
        assert.match(res.headers.get('content-type') ?? '', type, path);
        assert.ok(res.text.length > 0, path);
      }
      const js = await call(till, 'GET', '/checkout/assets/checkout.js');
      assert.doesNotMatch(js.text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, 'the page writes text, never HTML');
    });
  }

  test('/checkout/<id>/ redirects to /checkout/<id>, relatively (the page\'s files are relative to it)', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const res = await fetch(`${till.url}/checkout/${inv.id}/?lang=en`, { redirect: 'manual' });
    assert.equal(res.status, 308);
    assert.equal(res.headers.get('location'), `../${inv.id}?lang=en`);
    assert.ok(res.headers.get('x-request-id'));
    const followed = await fetch(`${till.url}/checkout/${inv.id}/`);
    assert.equal(followed.url, `${till.url}/checkout/${inv.id}`);
    assert.equal(followed.status, 200);
    assert.match(await followed.text(), /assets\/checkout\.js/);
  });

  test('answers If-None-Match with 304', async (t) => {
    const till = await startTestTill(t);
    const first = await call(till, 'GET', '/checkout/assets/checkout.js');
    const etag = first.headers.get('etag');
    assert.ok(etag);
    assert.equal(first.headers.get('cache-control'), 'no-cache');
    const again = await till.request('/checkout/assets/checkout.js', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(await again.text(), '');
    // RFC 9110 13.1.2: weak comparison (a compressing proxy marks its copy W/), a list, or *.
    const valid = [`W/${etag}`, `"other", ${etag}`, `"other",W/${etag}`, '*'];
    const invalid = ['"other"', `${etag.slice(0, -2)}"`, `W/"other", "x"`];
    for (const header of valid) assert.equal((await till.request('/checkout/assets/checkout.js', { headers: { 'if-none-match': header } })).status, 304, header);
    for (const header of invalid) assert.equal((await till.request('/checkout/assets/checkout.js', { headers: { 'if-none-match': header } })).status, 200, header);
  });

  test('each route that answers 304 says so in the OpenAPI document', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const doc = (await call(till, 'GET', '/v1/openapi.json')).body as { paths: Record<string, { get: { responses: Record<string, unknown> } }> };
    const routes: Array<[string, string]> = [
      [`/checkout/${inv.id}`, '/checkout/{id}'],
      [`/checkout/${inv.id}/qr.svg`, '/checkout/{id}/qr.svg'],
      ['/checkout/assets/checkout.css', '/checkout/assets/{name}'],
    ];
    for (const [path, documented] of routes) {
      assert.equal((await till.request(path, { headers: { 'if-none-match': '*' } })).status, 304, path);
      assert.ok(doc.paths[documented]!.get.responses['304'], `304 is documented for ${documented}`);
    }
  });

  test('an unknown invoice gets the page (it says so itself) with status 404, also a mistyped link that is not even an id', async (t) => {
    const till = await startTestTill(t);
    for (const id of [MISSING_ID, 'inv_%zz', '%E0%A4%A']) {
      const res = await call(till, 'GET', `/checkout/${id}`);
      assert.equal(res.status, 404, id);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/, id);
      assert.ok(res.headers.get('x-request-id'));
    }
  });

  test('a link cut short or mangled still reaches the page (not a JSON error): /checkout/, /checkout, /checkout/%zz/', async (t) => {
    const till = await startTestTill(t);
    const cut = await fetch(`${till.url}/checkout/`);
    assert.equal(cut.status, 404);
    assert.match(cut.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await cut.text(), /assets\/checkout\.js/);
    const bare = await fetch(`${till.url}/checkout?x=1`, { redirect: 'manual' });
    assert.deepEqual([bare.status, bare.headers.get('location')], [308, 'checkout/?x=1']);
    const mangled = await fetch(`${till.url}/checkout/%zz/`, { redirect: 'manual' });
    assert.deepEqual([mangled.status, mangled.headers.get('location')], [308, '../%zz']);
    const followed = await fetch(`${till.url}/checkout/%zz/`);
    assert.equal(followed.status, 404);
    assert.match(followed.headers.get('content-type') ?? '', /^text\/html/);
  });

  test('serves only the page files: anything else under assets is 404', async (t) => {
    const till = await startTestTill(t);
    for (const path of [
      '/checkout/assets/index.html',
      '/checkout/assets/..%2f..%2fpackage.json',
      '/checkout/assets/%2e%2e%2fcheckout%2fcheckout.js',
      '/checkout/assets/nothing.js',
    ]) {
      const res = await call(till, 'GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.code, 'not_found', path);
    }
  });

  test('the QR code is an SVG of what is due: payment_uri, or the rest while partly paid, or the amount the page shows', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 10_000 });
    const qr = await call(till, 'GET', `/checkout/${inv.id}/qr.svg`);
    assert.equal(qr.status, 200);
    assert.equal(qr.headers.get('content-type'), 'image/svg+xml');
    assert.equal(qr.headers.get('content-security-policy'), "default-src 'none'");
    assert.match(qr.text, /^<svg[^>]*viewBox/);

    await receivePayment(till, inv.id, 4_000);
    const partial = await call(till, 'GET', `/checkout/${inv.id}/qr.svg`);
    assert.notEqual(partial.text, qr.text, 'a new amount, a new code');
    assert.notEqual(partial.headers.get('etag'), qr.headers.get('etag'));
    // The page names the amount its text shows, which a payment landing in between would change.
    assert.equal((await call(till, 'GET', `/checkout/${inv.id}/qr.svg?due=10000`)).text, qr.text, 'the amount the page asked for');
    assert.equal((await call(till, 'GET', `/checkout/${inv.id}/qr.svg?due=6000`)).text, partial.text);
    // No page could show 7,000 or 1: such a link (crafted, to make Till draw code after code) gets what is due.
    for (const due of ['10001', '0', '-1', '6000.5', '1e3', '', '7000', '1']) {
      assert.equal((await call(till, 'GET', `/checkout/${inv.id}/qr.svg?due=${due}`)).text, partial.text, `due=${due}: what is due`);
    }

    // With 4,000 and 1,000 received, a page could also have shown 9,000 (the first replaced) and 5,000 (now).
    await receivePayment(till, inv.id, 1_000, 'cd');
    const codes = new Map<string, string>();
    for (const due of ['10000', '9000', '6000', '5000', '8000', '']) codes.set(due, (await call(till, 'GET', `/checkout/${inv.id}/qr.svg?due=${due}`)).text);
    assert.equal(new Set(['10000', '9000', '6000', '5000'].map((due) => codes.get(due))).size, 4, 'each amount a page could show, its own code');
    assert.equal(codes.get('8000'), codes.get('5000'), 'not one a page could show: what is due');
    assert.equal(codes.get(''), codes.get('5000'));
    const png = await call(till, 'GET', `/checkout/${inv.id}/qr.png?due=9000`);
    assert.equal(png.status, 200);
    assert.notEqual(png.headers.get('etag'), (await call(till, 'GET', `/checkout/${inv.id}/qr.png?due=8000`)).headers.get('etag'));

    assert.equal((await call(till, 'GET', `/checkout/${MISSING_ID}/qr.svg`)).status, 404);
  });

  test('a few older amounts are drawn per invoice, then only what is due: crafted links cannot make Till draw code after code', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 1_000_000 });
    // 13 payments (one transaction's outputs, say): a page could have shown nearly any amount.
    for (let i = 0; i < 13; i++) await receivePayment(till, inv.id, 330, (i + 16).toString(16));
    const now = await call(till, 'GET', `/checkout/${inv.id}/qr.png?due=${1_000_000 - 13 * 330}`);
    const etags: string[] = [];
    for (let due = 1; due <= 40; due++) etags.push((await call(till, 'GET', `/checkout/${inv.id}/qr.png?due=${due}`)).headers.get('etag')!);
    const drawnForCrafted = new Set(etags.filter((etag) => etag !== now.headers.get('etag')));
    assert.ok(drawnForCrafted.size > 0 && drawnForCrafted.size < 8, `${drawnForCrafted.size} codes drawn for 40 crafted amounts`);
    assert.equal(etags.at(-1), now.headers.get('etag'), 'past the bound: what is due now');
    // One drawn before is still served (a page that showed it keeps its image).
    assert.equal((await call(till, 'GET', `/checkout/${inv.id}/qr.png?due=1`)).headers.get('etag'), etags[0]);
    assert.notEqual(etags[0], now.headers.get('etag'));
  });
});
