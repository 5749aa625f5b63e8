import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { after, before, type TestContext } from 'node:test';
import jsQRModule from 'jsqr';
import { chromium, type Browser, type Page } from 'playwright-core';
import { installDebianPackages } from '../helpers/apt.ts';
import { setupStore, startTestTill, type TestTill } from '../helpers/till-server.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createInvoice } from '../integration/checkout/checkout-helpers.ts';

// What the browser tests of the hosted checkout share: Debian's Chromium,
// started once per file, and a page opened on a phone-sized viewport that
// records what its console reports.

// jsqr is CommonJS typed as an ES module: its function is the default's default.
const jsQR = jsQRModule.default;

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url);
export const PHONE = { width: 390, height: 844 };

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

export const skipReason = chromiumMissing();
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

export interface OpenPage {
  page: Page;
  status: number;
  /** Console errors and uncaught exceptions (a CSP violation shows up here). */
  problems: string[];
}

export async function openCheckout(
  t: { after(fn: () => Promise<void>): void },
  till: TestTill,
  id: string,
  query = '',
  viewport: { width: number; height: number } = PHONE,
  { javaScriptEnabled = true, fakeClock = false } = {},
): Promise<OpenPage> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, javaScriptEnabled });
  t.after(() => context.close());
  const page = await context.newPage();
  // The page's own clock, moved by the test (page.clock.fastForward); the server's is the till's.
  if (fakeClock) await page.clock.install();
  page.setDefaultTimeout(8000);
  const problems: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`${m.text()} (${m.location().url})`));
  page.on('pageerror', (e) => problems.push(e.message));
  const res = await page.goto(`${till.url}/checkout/${id}${query}`);
  return { page, status: res?.status() ?? 0, problems };
}

/** Waits for the status headline to read `text`. */
export async function expectStatus(page: Page, text: string): Promise<void> {
  await page.waitForFunction((t) => document.getElementById('status')?.textContent === t, text);
}

/** The page shows the invoice waiting for payment and is subscribed to its changes: a change made now reaches it. */
export async function expectLive(page: Page, till: TestTill, invoiceId: string): Promise<void> {
  await expectStatus(page, 'Waiting for payment');
  await waitFor(() => till.rt.ctx.feed.subscriberCount(invoiceId) === 1, 'the page to subscribe');
}

/** A till with a new 10,000-sat invoice whose page is open and live (expectLive). */
export async function openLivePage(t: TestContext, viewport = PHONE) {
  const till = await startTestTill(t);
  const store = setupStore(till);
  const inv = await createInvoice(till, store);
  const { page } = await openCheckout(t, till, inv.id, '', viewport);
  await expectLive(page, till, inv.id);
  return { till, store, inv, page };
}

/**
 * Reads the QR code as the buyer's camera would: a screenshot of the code on
 * the page, decoded to pixels by the browser (an about:blank page, outside the
 * checkout's CSP) and read by jsQR.
 */
export async function readQr(page: Page): Promise<string> {
  const png = await page.locator('#qr').screenshot();
  // A context of its own: the page's may run no script (the page without JavaScript).
  const scratch = await page.context().browser()!.newPage();
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

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: new URL(`checkout-${name}.png`, ARTIFACTS).pathname, fullPage: true });
}
