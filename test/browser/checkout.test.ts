import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, describe, test, type TestContext } from 'node:test';
import jsQRModule from 'jsqr';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expireDueInvoices } from '../../src/services/invoices.ts';
import { updateStore } from '../../src/services/stores.ts';
import { installDebianPackages } from '../helpers/apt.ts';
import { failSyncDuring } from '../helpers/held-sync.ts';
import { call, setupStore, startTestTill, type TestTill } from '../helpers/till-server.ts';
import { createInvoice, receivePayment, simulate, waitFor } from '../integration/checkout/checkout-helpers.ts';

// The hosted checkout in a real headless Chromium (Debian's package): the QR
// code the buyer sees decodes to the payment request, and the page follows
// the invoice live over each transport without a reload.

// jsqr is CommonJS typed as an ES module: its function is the default's default.
const jsQR = jsQRModule.default;

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url);
const PHONE = { width: 390, height: 844 };

/** Null when Chromium is there (installing it on a root CI box), else why the tests skip. */
function chromiumMissing(): string | null {
  if (existsSync(CHROMIUM)) return null;
  if (process.getuid?.() === 0 && process.env.CI === 'true') {
    const failed = installDebianPackages(['chromium']);
    if (failed) return `Chromium could not be installed here (${failed})`;
    if (existsSync(CHROMIUM)) return null;
  }
  return `no Chromium at ${CHROMIUM}: install it with "apt-get install -y chromium" (the test does so itself as root with CI=true)`;
}

const skipReason = chromiumMissing();
if (skipReason) console.log(`# skipping browser tests: ${skipReason}`);

let browser: Browser;

before(async () => {
  if (skipReason) return;
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
    timeout: 30_000,
  });
});

after(async () => {
  await browser?.close();
});

interface OpenPage {
  page: Page;
  status: number;
  /** Console errors and uncaught exceptions (a CSP violation shows up here). */
  problems: string[];
}

async function openCheckout(t: { after(fn: () => Promise<void>): void }, till: TestTill, id: string, query = ''): Promise<OpenPage> {
  const context = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 1 });
  t.after(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(8000);
  const problems: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`${m.text()} (${m.location().url})`));
  page.on('pageerror', (e) => problems.push(e.message));
  const res = await page.goto(`${till.url}/checkout/${id}${query}`);
  return { page, status: res?.status() ?? 0, problems };
}

/** A till with a new invoice whose page is open, waiting for payment and subscribed to its changes. */
async function openLivePage(t: TestContext) {
  const till = await startTestTill(t);
  const store = setupStore(till);
  const inv = await createInvoice(till, store);
  const { page } = await openCheckout(t, till, inv.id);
  await expectStatus(page, 'Waiting for payment');
  await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the page to subscribe');
  return { till, store, inv, page };
}

/** Waits for the status headline to read `text`. */
async function expectStatus(page: Page, text: string): Promise<void> {
  await page.waitForFunction((t) => document.getElementById('status')?.textContent === t, text);
}

/**
 * Reads the QR code as the buyer's camera would: a screenshot of the code on
 * the page, decoded to pixels by the browser (an about:blank page, outside the
 * checkout's CSP) and read by jsQR.
 */
async function readQr(page: Page): Promise<string> {
  const png = await page.locator('#qr').screenshot();
  const scratch = await page.context().newPage();
  try {
    const { width, height, rgba } = await scratch.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const g = canvas.getContext('2d')!;
      g.drawImage(img, 0, 0);
      return { width: canvas.width, height: canvas.height, rgba: Array.from(g.getImageData(0, 0, canvas.width, canvas.height).data) };
    }, png.toString('base64'));
    const code = jsQR(Uint8ClampedArray.from(rgba), width, height);
    assert.ok(code, 'the QR code on the page decodes');
    return code.data;
  } finally {
    await scratch.close();
  }
}

async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`checkout-${name}.png`, ARTIFACTS).pathname, fullPage: true });
}

describe('hosted checkout page in Chromium', { skip: skipReason ?? false }, () => {
  test('shows the invoice and a QR code of its payment_uri, then turns paid live (SSE)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till);
    updateStore(till.rt.ctx, store.storeId, { name: 'Corner Café', brandColor: '#0a7d5a' });
    const inv = await createInvoice(till, store, { amount: '12.50', currency: 'USD', metadata: { order: 'A-77' } });
    const { page, status, problems } = await openCheckout(t, till, inv.id);
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
    await expectStatus(page, 'Waiting for payment');
    await waitFor(() => till.rt.ctx.feed.subscriberCount(inv.id) === 1, 'the page to subscribe');

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
    assert.equal(await page.locator('#status').getAttribute('aria-live'), 'polite');
    assert.equal(await page.getByLabel('Address').inputValue(), inv.address);
    assert.ok(await page.getByRole('img', { name: /QR code/ }).isVisible());
    // Tab reaches the copy button; Enter copies (clipboard granted to this origin).
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: till.url });
    await page.locator('#address').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'copy-address');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('copy-address')?.textContent === 'Copied');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), inv.address);
  });
});
