import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startTestTill } from '../helpers/till-server.ts';
import { expectStatus, openCheckout, skipReason } from './checkout-browser.ts';

// The hosted checkout as buyers meet it off the happy path, in a real
// headless Chromium: each test is something a buyer would notice.

describe('hosted checkout for buyers, in Chromium', { skip: skipReason ?? false }, () => {
  test('an unknown invoice offers nothing to copy and no countdown', async (t) => {
    const till = await startTestTill(t);
    const { page } = await openCheckout(t, till, 'inv_00000000000000000000000000');
    await expectStatus(page, 'Invoice not found');
    assert.equal(await page.locator('#copy-address').isDisabled(), true);
    assert.equal(await page.locator('#copy-amount').isDisabled(), true);
    assert.equal(await page.locator('#countdown').evaluate((el) => getComputedStyle(el).visibility), 'hidden');
  });
});
