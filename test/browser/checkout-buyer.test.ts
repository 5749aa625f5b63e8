import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { updateStore } from '../../src/services/stores.ts';
import { testTpub } from '../helpers/keys.ts';
import { listenOnLoopback } from '../helpers/listen.ts';
import { call, setupStore, startTestTill } from '../helpers/till-server.ts';
import { createInvoice, receivePayment, simulate } from '../integration/checkout/checkout-helpers.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { expectLive, expectStatus, openCheckout, openLivePage, PHONE, readQr, screenshot, skipReason } from './checkout-browser.ts';

// The hosted checkout as buyers meet it off the happy path, in a real
// headless Chromium: each test is something a buyer would notice.

const SMALL_PHONE = { width: 320, height: 640 };

/** WCAG contrast ratio of an rgb() or rgba() colour against white (a translucent one as it shows on white). */
function contrastOnWhite(rgb: string): number {
  const [r8, g8, b8, alpha = 1] = rgb.match(/\d+(\.\d+)?/g)!.map(Number);
  const [r, g, b] = [r8!, g8!, b8!].map((c) => (alpha * c) / 255 + (1 - alpha)).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 1.05 / (0.2126 * r! + 0.7152 * g! + 0.0722 * b! + 0.05);
}

/**
 * A proxy on loopback in front of Till that passes HTTP through but holds back
 * the body of every stream of one kind (a WebSocket's frames after its 101, or
 * an event stream after its head): what a proxy buffering the stream looks like
 * to the page. The first `passing` such streams pass; `cutPassing` drops those
 * connections, so the page reconnects into a stream that is held (or passes,
 * while `passing` allows); `silencePassing` holds them back from then on without
 * closing them (a network path gone dead). `streams` counts the streams begun.
 */
async function startStreamHoldingProxy(
  t: TestContext,
  target: string,
  kind: 'ws' | 'sse',
  passing = 0,
): Promise<{ url: string; cutPassing(): void; silencePassing(): void; streams(): number }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const passed: Socket[] = [];
  const silenced = new Set<Socket>();
  let seen = 0;
  const isStreamHead = (head: string) => (kind === 'ws' ? head.startsWith('HTTP/1.1 101') : head.startsWith('HTTP/1.1 200') && /content-type: text\/event-stream/i.test(head));
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => (client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream);
    // Once a connection carries a stream, all it carries after is that stream.
    let holding = false;
    upstream.on('data', (chunk: Buffer) => {
      if (holding || silenced.has(client)) return;
      const end = chunk.indexOf('\r\n\r\n');
      if (!passed.includes(client) && end >= 0 && isStreamHead(chunk.subarray(0, end).toString('latin1'))) {
        seen++;
        if (passed.length < passing) passed.push(client);
        else {
          holding = true;
          return void client.write(chunk.subarray(0, end + 4));
        }
      }
      client.write(chunk);
    });
  });
  const url = await listenOnLoopback(server);
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url, cutPassing: () => passed.forEach((s) => s.destroy()), silencePassing: () => passed.forEach((s) => silenced.add(s)), streams: () => seen };
}

/**
 * A proxy on loopback in front of Till whose connections can all be cut at
 * once, and which then turns every new one away (`down`) until `up`: the
 * buyer's network gone for a while.
 */
async function startDroppingProxy(t: TestContext, target: string): Promise<{ url: string; down(): void; up(): void }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => (sockets.delete(s), client.destroy(), upstream.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  const url = await listenOnLoopback(server);
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return {
    url,
    down: () => {
      refusing = true;
      for (const s of sockets) s.destroy();
    },
    up: () => (refusing = false),
  };
}

describe('hosted checkout for buyers, in Chromium', { skip: skipReason ?? false }, () => {
  test('an unknown invoice offers nothing to copy and no countdown', async (t) => {
    const till = await startTestTill(t);
    const { page } = await openCheckout(t, till, 'inv_00000000000000000000000000');
    await expectStatus(page, 'Invoice not found');
    assert.equal(await page.locator('#copy-address').isDisabled(), true);
    assert.equal(await page.locator('#copy-amount').isDisabled(), true);
    assert.equal(await page.locator('#countdown').evaluate((el) => getComputedStyle(el).visibility), 'hidden');
    assert.doesNotMatch(await page.locator('main').ariaSnapshot(), /[Ss]can/, 'no code to scan is announced');
  });

  test('a mistyped link whose id does not decode says "Invoice not found", as its 404 status does', async (t) => {
    const till = await startTestTill(t);
    const { page, status } = await openCheckout(t, till, 'inv_%zz');
    assert.equal(status, 404);
    await expectStatus(page, 'Invoice not found');
  });

  test('without JavaScript the buyer lands on the page the server renders, can pay from it, and sees the payment arrive', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till, { xpub: `tr(${testTpub('taproot')})` }));
    const { page, problems } = await openCheckout(t, till, inv.id, '', SMALL_PHONE, { javaScriptEnabled: false });
    // The static page's <noscript> refresh sends it on, keeping the invoice's path.
    await page.waitForURL(`${till.url}/checkout/${inv.id}?plain`);
    const status = page.locator('#status');
    assert.equal(await status.textContent(), 'Waiting for payment');
    const box = (await status.boundingBox())!;
    assert.ok(box.y + box.height <= SMALL_PHONE.height, `the status is below the fold, at ${box.y} px`);
    // What a buyer pays from: the whole address on screen, the amount, a code their wallet reads, a wallet link.
    const address = page.locator('#address');
    assert.equal(await address.textContent(), inv.address);
    const shown = (await address.boundingBox())!;
    assert.ok(shown.x >= 0 && shown.x + shown.width <= SMALL_PHONE.width, 'the address fits the small phone\'s width');
    assert.equal(await page.locator('#amount').textContent(), '0.00010000');
    assert.equal(await readQr(page), inv.payment_uri);
    assert.equal(await page.getByRole('link', { name: 'Open in wallet' }).getAttribute('href'), inv.payment_uri);
    assert.match((await page.locator('#countdown').textContent()) ?? '', /^Expires in \d+ minutes/);
    await screenshot(page, 'plain-waiting');

    await receivePayment(till, inv.id, 10_000);
    await page.getByRole('link', { name: 'Update now' }).click();
    await page.waitForURL(`${till.url}/checkout/${inv.id}?plain`);
    assert.equal(await status.textContent(), 'Payment detected');
    assert.equal(await page.locator('#qr').count(), 0, 'nothing to scan once paid');
    assert.equal(await page.getByRole('link', { name: 'Open in wallet' }).isVisible(), false);
    assert.deepEqual(problems, [], 'nothing the CSP or the browser refused');
  });

  test('the whole address is visible: a taproot address on a phone, a segwit one on a small phone', async (t) => {
    const till = await startTestTill(t);
    const cases = [
      { xpub: `tr(${testTpub('taproot')})`, viewport: undefined },
      { xpub: `wpkh(${testTpub('segwit')})`, viewport: SMALL_PHONE },
    ];
    for (const { xpub, viewport } of cases) {
      const inv = await createInvoice(till, setupStore(till, { xpub }));
      const { page } = await openCheckout(t, till, inv.id, '', viewport);
      await expectStatus(page, 'Waiting for payment');
      const box = await page.locator('#address').evaluate((el) => ({ scroll: el.scrollHeight, client: el.clientHeight }));
      assert.ok(box.scroll <= box.client, `${inv.address} (${inv.address.length} characters) is cut off: ${box.scroll} px of text in ${box.client} px`);
    }
  });

  test('a phone set to large text (20 px) keeps the Copy buttons on the screen: nothing scrolls sideways', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount_sats: 2_100_000_000_000_000 });
    const { page } = await openCheckout(t, till, inv.id, '', { width: 360, height: 740 });
    await expectStatus(page, 'Waiting for payment');
    // The browser's font size setting ("Large" is 20 px), as the buyer sets it.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Page.setFontSizes', { fontSizes: { standard: 20, fixed: 20 } });
    await page.waitForFunction(() => getComputedStyle(document.documentElement).fontSize === '20px');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.equal(width, 360, `the page is ${width} px wide on a 360 px screen`);
    for (const button of ['#copy-address', '#copy-amount']) {
      const box = (await page.locator(button).boundingBox())!;
      assert.ok(box.x + box.width <= 360, `${button} ends at ${box.x + box.width} px`);
    }
  });

  test('the keyboard focus and the buttons\' edges stay visible on a store with a light brand colour', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    updateStore(till.rt.ctx, store.storeId, { brandColor: '#ffffff' });
    const inv = await createInvoice(till, store);
    const { page } = await openCheckout(t, till, inv.id);
    await expectStatus(page, 'Waiting for payment');
    await page.locator('#address').focus();
    await page.keyboard.press('Tab');
    const outline = await page.locator('#copy-address:focus-visible').evaluate((el) => getComputedStyle(el).outlineColor);
    // WCAG 1.4.11: a focus indicator needs 3:1 against what is around it (the white card).
    assert.ok(contrastOnWhite(outline) >= 3, `focus outline ${outline} on white: ${contrastOnWhite(outline).toFixed(2)}:1`);
    // A button's boundary needs 3:1 too: a white button on the white card has only its edge.
    for (const button of ['#copy-address', '#copy-amount']) {
      const edge = await page.locator(button).evaluate((el) => ({ color: getComputedStyle(el).borderTopColor, width: parseFloat(getComputedStyle(el).borderTopWidth) }));
      assert.ok(edge.width >= 1 && contrastOnWhite(edge.color) >= 3, `${button}: edge ${edge.width}px ${edge.color} on white: ${contrastOnWhite(edge.color).toFixed(2)}:1`);
    }
  });

  test('a screen reader hears what is missing, not only "Partly paid", and the copy buttons say what they copy', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount_sats: 10_000 });
    const { page } = await openCheckout(t, till, inv.id);
    await expectLive(page, till, inv.id);
    await receivePayment(till, inv.id, 4_000);
    await expectStatus(page, 'Partly paid');
    const live = page.locator('[aria-live]:has(#status-detail)');
    assert.equal(await live.count(), 1, 'the detail line is in a live region');
    assert.match((await live.textContent()) ?? '', /Send the remaining 0\.00006000 BTC/);
    assert.ok(await page.getByRole('button', { name: 'Copy address' }).isVisible());
    assert.ok(await page.getByRole('button', { name: 'Copy amount' }).isVisible());
  });

  test('once paid, a screen reader is no longer told to scan a code that is gone', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { page } = await openCheckout(t, till, inv.id);
    await expectStatus(page, 'Waiting for payment');
    assert.match(await page.locator('main').ariaSnapshot(), /Scan with a Bitcoin wallet/);
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the page to subscribe');
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
    assert.doesNotMatch(await page.locator('main').ariaSnapshot(), /[Ss]can/);
  });

  test('when time is up on an invoice the server has not expired yet (Till catching up with the chain), the page no longer asks for a payment', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 10_000, expires_in_minutes: 5 });
    const { page } = await openCheckout(t, till, inv.id, '', PHONE, { fakeClock: true });
    await expectLive(page, till, inv.id);
    await receivePayment(till, inv.id, 4_000);
    await expectStatus(page, 'Partly paid');
    assert.ok(await page.locator('#qr').isVisible());
    // The page's clock passes expires_at; the till's does not move, so the invoice stays pending there.
    await page.clock.fastForward('05:01');
    await expectStatus(page, 'Time is up');
    assert.match((await page.locator('#status-detail').textContent()) ?? '', /Received 0\.00004000 of 0\.00010000 BTC\. Do not send a payment now/);
    assert.equal(await page.locator('#qr').isVisible(), false, 'no code to scan');
    assert.equal(await page.locator('#open-wallet').isVisible(), false, 'no wallet link');
    assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.status, 'pending');
  });

  test('an invoice cancelled after a partial payment tells the buyer what was received', async (t) => {
    const { till, store, inv, page } = await openLivePage(t);
    await receivePayment(till, inv.id, 4_000);
    await expectStatus(page, 'Partly paid');
    assert.equal((await call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: store.key })).status, 200);
    await expectStatus(page, 'Invoice cancelled');
    assert.match((await page.locator('#status-detail').textContent()) ?? '', /Received 0\.00004000 BTC.*refund/);
  });

  test('a coinbase payment (a miner paying from its block) waits for its 100 confirmations, and the page counts to 100', async (t) => {
    const { till, store, inv, page } = await openLivePage(t);
    await receivePayment(till, inv.id, 10_000, 'cb', { coinbaseConfirmations: 5 });
    await expectStatus(page, 'Payment detected');
    assert.equal(await page.locator('#status-detail').textContent(), 'Waiting for confirmations: 5 of 100.');
  });

  test('a buyer who paid anyway after the shop cancelled (in their wallet at that moment) is told, on coming back, that it was received', async (t) => {
    const { till, store, inv, page } = await openLivePage(t);
    assert.equal((await call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: store.key })).status, 200);
    await expectStatus(page, 'Invoice cancelled');
    assert.equal(await page.locator('#status-detail').textContent(), 'Do not send a payment. Ask the merchant for a new invoice.');
    assert.equal(await page.locator('#qr').isVisible(), false, 'no code to scan');
    await simulate(till, store, inv.id, 'payment_detected'); // recorded for a refund, as the chain's would be
    // The buyer comes back from the wallet app.
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await page.waitForFunction(() => /^Received 0\.00010000 BTC\. Do not send more: contact the merchant about a refund\.$/.test(document.getElementById('status-detail')?.textContent ?? ''));
    assert.equal(await page.locator('#status').textContent(), 'Invoice cancelled');
  });

  // The snapshot says the invoice is final, and so do the streams (SSE's 204, the WebSocket's 1000): a page that
  // polls (no stream works through the buyer's network) must stop promising too.
  for (const query of ['', '?transport=poll']) {
    test(`a late payment still unconfirmed when the late window closes is not shown as waiting for confirmations (${query || 'streams'})`, async (t) => {
      const till = await startTestTill(t);
      const store = setupStore(till);
      const inv = await createInvoice(till, store, { amount_sats: 10_000 });
      await simulate(till, store, inv.id, 'expired');
      await simulate(till, store, inv.id, 'payment_detected');
      till.clock.advance(8 * 24 * 60 * 60_000); // past the default 7-day late window: it can no longer become late_paid
      const { page } = await openCheckout(t, till, inv.id, query);
      await page.waitForFunction(() => /too late/.test(document.getElementById('status')?.textContent ?? ''), null, { timeout: 12_000 });
      assert.match((await page.locator('#status-detail').textContent()) ?? '', /refund/);
    });
  }

  test('over HTTP/1.1 behind a proxy that upgrades the WebSocket but passes nothing on, the page goes on with SSE', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const proxied = await startStreamHoldingProxy(t, till.url, 'ws');
    const { page } = await openCheckout(t, { ...till, url: proxied.url }, inv.id);
    await expectStatus(page, 'Waiting for payment');
    await page.waitForFunction(() => document.querySelector('main')?.dataset.transport === 'sse', null, { timeout: 15_000 });
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
  });

  // A stream that worked, reconnected through a proxy that now passes nothing on: the page hands over to the other
  // transport (the WebSocket reconnects after 2 s, EventSource after the server's 2-5 s, each watched for 10 s more).
  for (const { kind, name, query, next } of [
    { kind: 'ws', name: 'a WebSocket', query: '', next: 'sse' },
    { kind: 'sse', name: 'an event stream', query: '?transport=sse', next: 'ws' },
  ] as const) {
    test(`${name} that worked, reconnected through a proxy that now passes nothing on, hands over to ${next === 'sse' ? 'SSE' : 'the WebSocket'}`, async (t) => {
      const till = await startTestTill(t);
      const store = setupStore(till);
      const inv = await createInvoice(till, store);
      const proxied = await startStreamHoldingProxy(t, till.url, kind, 1);
      const { page } = await openCheckout(t, { ...till, url: proxied.url }, inv.id, query);
      await receivePayment(till, inv.id, 1_000);
      await expectStatus(page, 'Partly paid');
      assert.equal(await page.evaluate(() => document.querySelector('main')?.dataset.transport), kind);
      proxied.cutPassing();
      await page.waitForFunction((want) => document.querySelector('main')?.dataset.transport === want, next, { timeout: 30_000 });
      await simulate(till, store, inv.id, 'paid');
      await expectStatus(page, 'Paid');
    });
  }

  test('a WebSocket gone silent without a close (a dead network path): back on the page, the buyer sees the payment, and it streams again', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 10_000 });
    const proxied = await startStreamHoldingProxy(t, till.url, 'ws', 2);
    const { page } = await openCheckout(t, { ...till, url: proxied.url }, inv.id);
    await expectLive(page, till, inv.id);
    proxied.silencePassing();
    await receivePayment(till, inv.id, 4_000);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(await page.locator('#status').textContent(), 'Waiting for payment', 'the silent stream brought nothing');
    // The buyer comes back from the wallet app.
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await expectStatus(page, 'Partly paid');
    await waitFor(() => proxied.streams() === 2, 'a new stream');
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
  });

  test('a buyer whose connection dropped is told the page is reconnecting, not after a quick reconnect, and no longer once it is back', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const proxied = await startDroppingProxy(t, till.url);
    // The page's clock runs its reconnect waits (2, 4, 8 s) when the test moves it.
    const { page } = await openCheckout(t, { ...till, url: proxied.url }, inv.id, '', PHONE, { fakeClock: true });
    let closes = 0;
    let messages = 0;
    page.on('websocket', (ws) => {
      ws.on('framereceived', () => messages++);
      ws.on('close', () => closes++);
    });
    await expectStatus(page, 'Waiting for payment');
    await waitFor(() => messages === 1, 'the first message');
    const notice = page.getByRole('status').filter({ hasText: /Reconnecting/ });
    // Everything the notice ever said.
    await page.evaluate(() => {
      const region = document.getElementById('connection')!;
      (window as any).said = [];
      new MutationObserver(() => (window as any).said.push(region.textContent)).observe(region, { childList: true, characterData: true, subtree: true });
    });

    // A moment's drop: the first retry, 2 s on, gets through.
    proxied.down();
    await waitFor(() => closes === 1, 'the stream to drop');
    proxied.up();
    await page.clock.fastForward(2000);
    await waitFor(() => messages === 2, 'the stream to be back');
    await page.clock.fastForward(30_000);
    assert.deepEqual(await page.evaluate(() => (window as any).said), [], 'nothing flickered');

    // A longer one: the retries after 2 and 4 s are turned away.
    proxied.down();
    await waitFor(() => closes === 2, 'the stream to drop');
    await page.clock.fastForward(2000);
    await waitFor(() => closes === 3, 'the first retry to fail');
    await page.clock.fastForward(4000);
    await waitFor(() => closes === 4, 'the second retry to fail');
    await notice.waitFor();
    assert.equal(await page.locator('#connection').getAttribute('aria-live'), 'polite');
    assert.equal(await page.locator('#status').textContent(), 'Waiting for payment');
    proxied.up();
    await page.clock.fastForward(8000);
    await waitFor(() => messages === 3, 'the stream to be back');
    await page.waitForFunction(() => document.getElementById('connection')?.textContent === '');
    assert.deepEqual(await page.evaluate(() => (window as any).said), ['Connection lost. Reconnecting…', ''], 'said once, then cleared');
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
  });

  test('an event stream that reconnects with nothing missed stays on SSE (the server says it resumed)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const proxied = await startStreamHoldingProxy(t, till.url, 'sse', 2);
    const { page } = await openCheckout(t, { ...till, url: proxied.url }, inv.id, '?transport=sse');
    await expectLive(page, till, inv.id);
    proxied.cutPassing(); // EventSource reconnects after 2-5 s, with the version it has: no snapshot to send
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1 && proxied.streams() === 2, 'the page to reconnect', 15_000);
    // Past the reconnect watchdog (the server's retry, at most 5 s, plus 10 s): still SSE.
    await new Promise((r) => setTimeout(r, 16_000));
    assert.equal(await page.evaluate(() => document.querySelector('main')?.dataset.transport), 'sse');
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
  });

  test('a large USD price is grouped as the sats are', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount: '1234567.89', currency: 'USD' });
    const { page } = await openCheckout(t, till, inv.id);
    await expectStatus(page, 'Waiting for payment');
    assert.equal(await page.locator('#amount-fiat').textContent(), '≈ 1,234,567.89 USD');
    assert.match((await page.locator('#amount-sats').textContent()) ?? '', /^\d{1,3}(,\d{3})+ sats$/);
  });

  test('a partial payment on a small phone moves nothing under the buyer\'s thumb', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount_sats: 19_231 });
    const { page } = await openCheckout(t, till, inv.id, '', SMALL_PHONE);
    await expectStatus(page, 'Waiting for payment');
    const qrBefore = await page.locator('figure.qr').boundingBox();
    await receivePayment(till, inv.id, 5_000);
    await expectStatus(page, 'Partly paid');
    assert.deepEqual(await page.locator('figure.qr').boundingBox(), qrBefore);
  });

  test('a buyer who sent more than asked is told so, and who handles the difference, on a small phone without moving the layout', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 10_000 });
    const { page } = await openCheckout(t, till, inv.id, '', SMALL_PHONE);
    await expectStatus(page, 'Waiting for payment');
    const qrBefore = await page.locator('figure.qr').boundingBox();
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the page to subscribe');
    await receivePayment(till, inv.id, 15_000);
    await expectStatus(page, 'Payment detected');
    assert.match((await page.locator('#status-detail').textContent()) ?? '', /You sent 0\.00005000 BTC more than asked/);
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
    assert.equal(await page.locator('#status-detail').textContent(), 'Confirmed, thank you. You sent 0.00005000 BTC more than asked: the merchant handles any refund.');
    assert.deepEqual(await page.locator('figure.qr').boundingBox(), qrBefore);
  });

  test('a seventh checkout open in the same browser still loads (plain HTTP/1.1 allows 6 connections per host)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const first = await openCheckout(t, till, (await createInvoice(till, store)).id);
    await expectStatus(first.page, 'Waiting for payment');
    for (let tab = 2; tab <= 7; tab++) {
      const page = await first.page.context().newPage();
      await page.goto(`${till.url}/checkout/${(await createInvoice(till, store)).id}`, { timeout: 8000 });
      await expectStatus(page, 'Waiting for payment');
      // A WebSocket does not take one of the six; an EventSource would (over HTTP/2 it goes first).
      assert.equal(await page.locator('main').getAttribute('data-transport'), 'ws');
    }
  });

  test('a seventh tab of the same invoice still loads: a page revalidated from the cache (304) also takes the WebSocket', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till));
    const first = await openCheckout(t, till, inv.id);
    await expectStatus(first.page, 'Waiting for payment');
    for (let tab = 2; tab <= 7; tab++) {
      const page = await first.page.context().newPage();
      await page.goto(`${till.url}/checkout/${inv.id}`, { timeout: 8000 });
      await expectStatus(page, 'Waiting for payment');
      assert.equal(await page.locator('main').getAttribute('data-transport'), 'ws', `tab ${tab}`);
    }
  });
});
