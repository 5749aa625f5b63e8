import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expireDueInvoices } from '../../src/services/invoices.ts';
import { updateStore } from '../../src/services/stores.ts';
import { failSyncDuring } from '../helpers/held-sync.ts';
import { call, setupStore, startTestTill } from '../helpers/till-server.ts';
import { changePayments, createInvoice, receivePayment, simulate } from '../integration/checkout/checkout-helpers.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { expectLive, expectStatus, openCheckout, openLivePage, readQr, screenshot, skipReason } from './checkout-browser.ts';

// The hosted checkout in a real headless Chromium (Debian's package): the QR
// code the buyer sees decodes to the payment request, and the page follows
// the invoice live over each transport without a reload.

describe('hosted checkout page in Chromium', { skip: skipReason ?? false }, () => {
  test('shows the invoice and a QR code of its payment_uri, then turns paid live (SSE)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    updateStore(till.rt.ctx, store.storeId, { name: 'Corner Café', brandColor: '#0a7d5a' });
    const inv = await createInvoice(till, store, { amount: '12.50', currency: 'USD', metadata: { order: 'A-77' } });
    const { page, status, problems } = await openCheckout(t, till, inv.id, '?transport=sse');
    assert.equal(status, 200);

    await expectStatus(page, 'Waiting for payment');
    assert.equal(await page.locator('#store-name').textContent(), 'Corner Café');
    assert.equal(await page.title(), 'Pay Corner Café');
    const btcText = `${Math.floor(inv.amount_sats / 1e8)}.${String(inv.amount_sats % 1e8).padStart(8, '0')}`;
    assert.equal(await page.locator('#amount-btc').textContent(), btcText);
    assert.equal(await page.locator('#amount-sats').textContent(), `${inv.amount_sats.toLocaleString('en-US')} sats`);
    assert.equal(await page.locator('#amount-fiat').textContent(), '≈ 12.50 USD');
    assert.equal(await page.locator('#address').inputValue(), inv.address);
    assert.equal(await page.locator('#amount').inputValue(), btcText);
    assert.equal(await page.locator('#open-wallet').getAttribute('href'), inv.payment_uri);
    assert.equal(await page.locator('#test-mode').isVisible(), true, 'a test invoice says so');
    // Server clock (the test's ManualClock) decides the countdown: 30 minutes left.
    assert.match((await page.locator('#countdown').textContent()) ?? '', /Expires in (30:00|29:5\d)/);
    assert.equal(await page.locator('main').getAttribute('data-transport'), 'sse');
    const brand = await page.locator('main').evaluate((el) => getComputedStyle(el).borderTopColor);
    assert.equal(brand, 'rgb(10, 125, 90)');
    assert.doesNotMatch(await page.content(), /A-77/, 'metadata never reaches the page');

    assert.equal(await readQr(page), inv.payment_uri);
    await screenshot(page, 'pending');

    const layoutBefore = await page.locator('#address').boundingBox();
    await page.evaluate(() => ((window as any).sameDocument = true));

    await simulate(till, store, inv.id, 'payment_detected');
    await expectStatus(page, 'Payment detected');
    assert.equal(await page.locator('#status-detail').textContent(), 'Waiting for confirmations: 0 of 1.');
    assert.equal(await page.locator('#qr').isVisible(), false);
    await screenshot(page, 'detected');

    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
    assert.equal(await page.evaluate(() => (window as any).sameDocument), true, 'no reload');
    assert.deepEqual(await page.locator('#address').boundingBox(), layoutBefore, 'nothing moved');
    // The countdown is done but keeps its place: hidden by visibility, not removed.
    assert.deepEqual(
      await page.locator('#countdown').evaluate((el) => [getComputedStyle(el).visibility, el.getBoundingClientRect().height > 0]),
      ['hidden', true],
    );
    await screenshot(page, 'paid');
    assert.deepEqual(problems, []);
  });

  test('falls back to WebSocket: the CSP allows it and the page turns paid', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { page, problems } = await openCheckout(t, till, inv.id, '?transport=ws');
    await expectStatus(page, 'Waiting for payment');
    await page.waitForFunction((id) => document.querySelector('main')?.dataset.transport === 'ws' && id, inv.id);
    // The socket is subscribed before the change is made.
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the page to subscribe');
    await simulate(till, store, inv.id, 'paid');
    await expectStatus(page, 'Paid');
    assert.deepEqual(problems, []);
  });

  test('falls back to polling', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { page, problems } = await openCheckout(t, till, inv.id, '?transport=poll');
    await expectStatus(page, 'Waiting for payment');
    await simulate(till, store, inv.id, 'paid');
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'Paid', null, { timeout: 9000 });
    assert.equal(await page.locator('main').getAttribute('data-transport'), 'poll');
    assert.deepEqual(problems, []);
  });

  test('a stream the server ends while the invoice is open (the database failed) hands over to polling', async (t) => {
    const { till, store, inv, page } = await openLivePage(t);
    const { result } = await failSyncDuring(till, () => call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: store.key }), 'EIO: i/o error, fdatasync');
    assert.equal(result.status, 503);
    // The stream ends; SSE's reconnect and the WebSocket are refused (503); polling goes on until Till is back.
    await page.waitForFunction(() => document.querySelector('main')?.dataset.transport === 'poll', null, { timeout: 12_000 });
    assert.equal(await page.locator('#status').textContent(), 'Waiting for payment', 'nothing it could not stand behind was shown');
  });

  test('a partial payment asks for the rest in the QR code; expiry then shows received vs due', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 10_000, expires_in_minutes: 10 });
    const { page, problems } = await openCheckout(t, till, inv.id);
    await expectLive(page, till, inv.id);

    await receivePayment(till, inv.id, 4_000);
    await expectStatus(page, 'Partly paid');
    assert.equal(await page.locator('#status-detail').textContent(), 'Received 0.00004000 of 0.00010000 BTC. Send the remaining 0.00006000 BTC.');
    assert.equal(await page.locator('#amount').inputValue(), '0.00006000');
    await page.waitForFunction(() => (document.getElementById('qr') as HTMLImageElement).complete);
    assert.equal(await readQr(page), `bitcoin:${inv.address}?amount=0.00006000`);
    await screenshot(page, 'partial');

    till.clock.advance(10 * 60_000);
    await expireDueInvoices(till.rt.ctx);
    await expectStatus(page, 'Expired: underpaid');
    assert.equal(await page.locator('#status-detail').textContent(), 'Received 0.00004000 of 0.00010000 BTC. Contact the merchant about a refund.');
    assert.equal(await page.locator('#qr').isVisible(), false);
    assert.equal(await page.locator('#copy-address').isDisabled(), true);
    await screenshot(page, 'underpaid');
    assert.deepEqual(problems, []);
  });

  test('a payment landing while the code loads does not give the code another amount than the text shows', async (t) => {
    const till = await startTestTill(t);
    const inv = await createInvoice(till, setupStore(till), { amount_sats: 10_000 });
    // Polling on the page's clock: a snapshot is fetched only when the test moves it.
    const { page, problems } = await openCheckout(t, till, inv.id, '?transport=poll', undefined, { fakeClock: true });
    await expectStatus(page, 'Waiting for payment');
    await receivePayment(till, inv.id, 4_000, 'ab');
    await page.clock.fastForward(5000);
    await expectStatus(page, 'Partly paid');
    // The code for the next amount is held on its way, while another payment lands.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const asked = new Promise<void>((r) => page.route('**/qr.svg*', async (route) => (r(), await released, route.continue())));
    await receivePayment(till, inv.id, 1_000, 'cd');
    await page.clock.fastForward(5000);
    await asked;
    await receivePayment(till, inv.id, 2_000, 'ef');
    release();
    await page.waitForFunction(() => {
      const qr = document.getElementById('qr') as HTMLImageElement;
      return qr.getAttribute('src')?.endsWith('due=5000') && qr.complete && qr.naturalWidth > 0;
    });
    assert.equal(await page.locator('#amount').inputValue(), '0.00005000');
    assert.equal(await readQr(page), `bitcoin:${inv.address}?amount=0.00005000`, 'the code asks for what the text says');
    assert.deepEqual(problems, []);
  });

  test('a paid invoice whose payment was double-spent away says so, not "confirmed"; restored, it is paid again', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store, { amount_sats: 5000 });
    await simulate(till, store, inv.id, 'paid');
    await simulate(till, store, inv.id, 'payment_reversed');
    const reversed = await openCheckout(t, till, inv.id);
    await expectStatus(reversed.page, 'Payment reversed');
    assert.equal(await reversed.page.locator('#status-detail').textContent(), 'Your payment was replaced by another transaction and no longer counts. Contact the merchant.');
    assert.equal(await reversed.page.locator('main').getAttribute('data-state'), 'underpaid');
    await screenshot(reversed.page, 'reversed');

    await simulate(till, store, inv.id, 'payment_restored');
    const restored = await openCheckout(t, till, inv.id);
    await expectStatus(restored.page, 'Paid');

    // A reorg takes its block away: the payment is back in the mempool, to be mined again.
    await changePayments(till, inv.id, (payments) => payments.map((p) => ({ ...p, status: 'mempool', confirmations: 0, blockHeight: null })));
    const reorged = await openCheckout(t, till, inv.id);
    await expectStatus(reorged.page, 'Paid: confirming again');
    assert.equal(await reorged.page.locator('#status-detail').textContent(), 'The block holding your payment was replaced. Waiting for confirmations: 0 of 1.');
    assert.deepEqual([...reversed.problems, ...restored.problems, ...reorged.problems], []);
  });

  test('cancelled and unknown invoices say so', async (t) => {
    const { till, store, inv, page } = await openLivePage(t);
    const cancel = await fetch(`${till.url}/v1/invoices/${inv.id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${store.key}` } });
    assert.equal(cancel.status, 200);
    await expectStatus(page, 'Invoice cancelled');
    await screenshot(page, 'cancelled');

    const missing = await openCheckout(t, till, 'inv_00000000000000000000000000');
    assert.equal(missing.status, 404);
    await expectStatus(missing.page, 'Invoice not found');
  });

  test('is keyboard usable and labelled', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    const inv = await createInvoice(till, store);
    const { page } = await openCheckout(t, till, inv.id);
    await expectStatus(page, 'Waiting for payment');
    assert.equal(await page.locator('[aria-live="polite"]:has(#status)').count(), 1, 'the status is in a live region');
    assert.equal(await page.getByLabel('Address', { exact: true }).inputValue(), inv.address);
    assert.ok(await page.getByRole('img', { name: /QR code/ }).isVisible());
    // Tab reaches the copy button; Enter copies (clipboard granted to this origin).
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: till.url });
    await page.locator('#address').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'copy-address');
    // What the copy live region says, each time it changes.
    await page.evaluate(() => {
      const region = document.getElementById('copy-feedback')!;
      (window as any).said = [];
      new MutationObserver(() => region.textContent && (window as any).said.push(region.textContent)).observe(region, { childList: true, characterData: true, subtree: true });
    });
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('copy-address')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), inv.address);
    // A second copy is announced again: a screen reader hears only what changed.
    await page.waitForFunction(() => document.getElementById('copy-address')?.textContent === 'Copy', null, { timeout: 5000 });
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => (window as any).said.length === 2, null, { timeout: 5000 });
    assert.deepEqual(await page.evaluate(() => (window as any).said), ['Address copied', 'Address copied']);
  });
});
