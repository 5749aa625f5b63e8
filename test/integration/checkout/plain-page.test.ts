import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { updateStore } from '../../../src/services/stores.ts';
import { PLAIN_REFRESH_SECONDS } from '../../../src/http/internal/plain-checkout.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestStore, type TestTill } from '../../helpers/till-server.ts';
import { createInvoice, receivePayment, simulate } from './checkout-helpers.ts';

// jsqr is CommonJS typed as an ES module: its function is the default's default.
const jsQR = jsQRModule.default;

// The checkout page Till renders for a browser without JavaScript
// (/checkout/<id>?plain, docs/CHECKOUT.md): what it says and asks for in each
// state, over HTTP. test/browser/checkout-buyer.test.ts opens it in Chromium
// with JavaScript off.

/** The page's visible words, tags dropped and entities decoded, in one line. */
function wordsOf(html: string): string {
  const body = html.slice(html.indexOf('<body>'));
  return body
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/\s+/g, ' ')
    .trim();
}

/** The text of the QR code in the PNG at `path`, read as a camera would (pngjs, then jsQR). */
async function readPngQr(till: TestTill, path: string): Promise<string | undefined> {
  const res = await till.request(path);
  assert.equal(res.status, 200, path);
  assert.equal(res.headers.get('content-type'), 'image/png');
  const png = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

/** The meta refresh's seconds, or null when the page does not reload. */
function refreshOf(html: string): number | null {
  const m = /<meta http-equiv="refresh" content="(\d+)">/.exec(html);
  return m ? Number(m[1]) : null;
}

async function openPlain(till: TestTill, id: string) {
  const res = await call(till, 'GET', `/checkout/${id}?plain`);
  return { ...res, words: wordsOf(res.text), refresh: refreshOf(res.text) };
}

interface Case {
  name: string;
  /** Brings a 10,000-sat invoice to the state. */
  make(till: TestTill, store: TestStore, id: string): Promise<unknown>;
  title: string;
  detail: RegExp;
  refresh: number | null;
  /** Sats the QR code and wallet link ask for; null when nothing is asked. */
  asks: number | null;
}

const cases: Case[] = [
  { name: 'waiting', make: async () => {}, title: 'Waiting for payment', detail: /Scan the code/, refresh: PLAIN_REFRESH_SECONDS.awaitingPayment, asks: 10_000 },
  { name: 'partly paid', make: (till, _s, id) => receivePayment(till, id, 4_000), title: 'Partly paid', detail: /Received 0\.00004000 of 0\.00010000 BTC\. Send the remaining 0\.00006000 BTC\./, refresh: PLAIN_REFRESH_SECONDS.awaitingPayment, asks: 6_000 },
  { name: 'payment detected', make: (till, s, id) => simulate(till, s, id, 'payment_detected'), title: 'Payment detected', detail: /Waiting for confirmations: 0 of 1\./, refresh: PLAIN_REFRESH_SECONDS.awaitingChain, asks: null },
  { name: 'paid', make: (till, s, id) => simulate(till, s, id, 'paid'), title: 'Paid', detail: /Your payment is confirmed/, refresh: null, asks: null },
  { name: 'expired', make: (till, s, id) => simulate(till, s, id, 'expired'), title: 'Invoice expired', detail: /Do not send a payment/, refresh: PLAIN_REFRESH_SECONDS.awaitingChain, asks: null },
  { name: 'reversed', make: async (till, s, id) => (await simulate(till, s, id, 'paid'), simulate(till, s, id, 'payment_reversed')), title: 'Payment reversed', detail: /replaced by another transaction/, refresh: null, asks: null },
  {
    name: 'cancelled with nothing received (a payment sent anyway would still show)',
    make: (till, s, id) => call(till, 'POST', `/v1/invoices/${id}/cancel`, { key: s.key }),
    title: 'Invoice cancelled',
    detail: /Ask the merchant for a new invoice/,
    refresh: PLAIN_REFRESH_SECONDS.awaitingChain,
    asks: null,
  },
];

describe('GET /checkout/:id?plain, the page without JavaScript', () => {
  for (const transport of TRANSPORTS) {
    test(`each state says what the scripted page says, asks for what is due, and reloads while it can change (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      for (const c of cases) {
        const inv = await createInvoice(till, store);
        await c.make(till, store, inv.id);
        const page = await openPlain(till, inv.id);
        assert.equal(page.status, 200, c.name);
        assert.ok(page.words.includes(`${c.title} `), `${c.name}: ${page.words}`);
        assert.match(page.words, c.detail, c.name);
        assert.equal(page.refresh, c.refresh, `${c.name}: refresh`);
        assert.ok(page.words.includes(inv.address), `${c.name}: the address is shown`);
        const qr = /<img id="qr" class="qr-image" src="([^"]+)"/.exec(page.text)?.[1];
        const wallet = /<a id="open-wallet" class="wallet-link" href="([^"]+)"( hidden)?>/.exec(page.text);
        if (c.asks === null) {
          assert.equal(qr, undefined, `${c.name}: no code to scan`);
          assert.equal(wallet?.[2], ' hidden', `${c.name}: no wallet link`);
        } else {
          assert.equal(qr, `${inv.id}/qr.png?due=${c.asks}`, c.name);
          assert.equal(wallet?.[2], undefined, `${c.name}: the wallet link shows`);
          const btcText = `0.${String(c.asks).padStart(8, '0')}`;
          assert.equal(wallet?.[1], c.asks === 10_000 ? inv.payment_uri : `bitcoin:${inv.address}?amount=${btcText}`, c.name);
          assert.ok(page.words.includes(`Amount (BTC) ${btcText}`), `${c.name}: ${page.words}`);
          // The image the page points at is a PNG (Tor Browser at Safest shows no SVG) of what the wallet link asks.
          assert.equal(await readPngQr(till, `/checkout/${qr}`), wallet?.[1], c.name);
        }
      }
    });
  }

  test('carries the page\'s strict CSP and no script, inline style or handler at all', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const page = await openPlain(till, inv.id);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'.*script-src 'self'/);
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.doesNotMatch(page.text, /<script|<style|\sstyle=|\son[a-z]+=/i);
    assert.match(page.text, /<link rel="stylesheet" href="assets\/checkout\.css">/, 'relative, as the scripted page: works under a proxy\'s sub-path');
    assert.match(page.words, /Test mode: do not send real bitcoin\./);
  });

  test('the store\'s name and logo URL are text, never markup', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    updateStore(till.rt.ctx, store.storeId, { name: '<b>Bob</b> & "Co" \'s <script>alert(1)</script>', logoUrl: 'https://example.com/logo.png?a=1&b="><script>' });
    const inv = await createInvoice(till, store);
    const page = await openPlain(till, inv.id);
    assert.doesNotMatch(page.text, /<b>|<script>/);
    assert.ok(page.words.includes('<b>Bob</b> & "Co" \'s <script>alert(1)</script>'), page.words);
    assert.match(page.text, /<img class="store-logo" src="https:\/\/example\.com\/logo\.png\?a=1&#38;b=&#34;&#62;&#60;script&#62;"/);
    assert.match(page.text, /<title>Pay &#60;b&#62;Bob/);
  });

  test('says how long is left on the server\'s clock, and "Time is up" once past it', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount_sats: 10_000, expires_in_minutes: 30 });
    const hhmm = (inv.expires_at as string).slice(11, 16);
    assert.match((await openPlain(till, inv.id)).words, new RegExp(`Expires in 30 minutes \\(${hhmm} UTC\\)`));
    till.clock.advance(29 * 60_000 + 30_000);
    assert.match((await openPlain(till, inv.id)).words, /Expires in less than a minute/);
    till.clock.advance(30_000);
    const late = await openPlain(till, inv.id);
    assert.match(late.words, /Time is up Do not send a payment now/);
    assert.doesNotMatch(late.words, /Expires in/);
    assert.equal(late.refresh, PLAIN_REFRESH_SECONDS.awaitingPayment, 'checking for payments already sent');
    assert.equal(/class="qr-image"/.test(late.text), false, 'no code to scan once time is up');
  });

  test('an unknown invoice, or a link that is not an id, is a 404 page that says so', async (t) => {
    const till = await startTestTill(t);
    for (const id of ['inv_00000000000000000000000000', 'inv_%zz', 'nonsense']) {
      const page = await openPlain(till, id);
      assert.equal(page.status, 404, id);
      assert.match(page.words, /Invoice not found Check the link you were given/, id);
      assert.equal(page.refresh, null, id);
    }
  });

  test('a link cut short before its id (/checkout/) sends a browser without JavaScript to the plain 404 once, not round again', async (t) => {
    const till = await startTestTill(t);
    const page = await call(till, 'GET', '/checkout/');
    assert.equal(page.status, 404);
    assert.match(page.text, /<noscript><meta http-equiv="refresh" content="0; url=\?plain"><\/noscript>/);
    const plain = await call(till, 'GET', '/checkout/?plain');
    assert.equal(plain.status, 404);
    assert.match(wordsOf(plain.text), /Invoice not found Check the link you were given/);
    assert.equal(refreshOf(plain.text), null);
    assert.doesNotMatch(plain.text, /<script/);
  });

  test('the scripted page sends a browser without JavaScript here, and links to it', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const page = await call(till, 'GET', `/checkout/${inv.id}`);
    assert.match(page.text, /<noscript><meta http-equiv="refresh" content="0; url=\?plain"><\/noscript>/);
    assert.match(page.text, /<a href="\?plain">Open the page without JavaScript<\/a>/);
    // The scripted page and the server share describe.js: its words are served to the browser too.
    const describe = await call(till, 'GET', '/checkout/assets/describe.js');
    assert.equal(describe.status, 200);
    assert.match(describe.text, /export function describe\(/);
  });
});
