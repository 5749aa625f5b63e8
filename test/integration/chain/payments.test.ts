import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { createInvoice, eventTypes, getInvoice, mineAndSync, startChainFixture, waitFor } from './helpers.ts';

describe('chain: payments end to end (HTTP + fake bitcoind)', () => {
  test('exact payment: detected in the mempool, paid at one confirmation', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    const seen = await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1 && getInvoice(f, inv.id), 'mempool payment');
    assert.equal(seen.status, 'pending');
    assert.equal(seen.payments[0].txid, txid);
    assert.equal(seen.payments[0].status, 'mempool');
    assert.equal(seen.amount_received_sats, 50_000);
    assert.equal(seen.amount_confirmed_sats, 0);
    await mineAndSync(f);
    const paid = await getInvoice(f, inv.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.payments[0].status, 'confirmed');
    assert.equal(paid.payments[0].confirmations, 1);
    assert.equal(paid.payments[0].block_height, f.node.tipHeight);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
    await mineAndSync(f, 2);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 3, 'confirmations keep counting');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid'], 'a payment is detected once, paid once');
  });

  test('two partial payments add up; overpayment is visible', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 20_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'pending');
    await f.node.pay(inv.address, 40_000);
    await mineAndSync(f);
    const paid = await getInvoice(f, inv.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.amount_received_sats, 60_000);
    assert.ok(paid.amount_received_sats > paid.amount_sats, 'overpaid by 10,000 sats, visible');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('one transaction paying two invoices pays both', async (t) => {
    const f = await startChainFixture(t);
    const a = await createInvoice(f, { amount_sats: 10_000 });
    const b = await createInvoice(f, { amount_sats: 20_000 });
    await f.node.payMany([{ address: a.address, sats: 10_000 }, { address: b.address, sats: 20_000 }]);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, a.id)).status, 'paid');
    assert.equal((await getInvoice(f, b.id)).status, 'paid');
  });

  test('underpayment then expiry: expired with the amount received', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    await f.node.pay(inv.address, 30_000);
    await mineAndSync(f);
    f.till.clock.advance(15 * 60_000);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
    const expired = await getInvoice(f, inv.id);
    assert.equal(expired.status, 'expired');
    assert.equal(expired.amount_received_sats, 30_000);
  });

  test('payment after expiry: late_paid inside the late window; ignored after it', async (t) => {
    const f = await startChainFixture(t);
    const late = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    const tooLate = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    f.till.clock.advance(5 * 60_000);
    await expireDueInvoices(f.till.rt.ctx);
    await f.node.pay(late.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, late.id)).status, 'late_paid');
    assert.deepEqual(eventTypes(f, late.id), ['invoice.created', 'invoice.expired', 'invoice.payment_detected', 'invoice.late_paid']);
    // Past the 7-day window the address is no longer watched.
    f.till.clock.advance(7 * 24 * 3600_000 + 1000);
    await f.till.rt.chain!.requestSync(false, 'test');
    await f.node.pay(tooLate.address, 50_000);
    await mineAndSync(f);
    const after = await getInvoice(f, tooLate.id);
    assert.equal(after.status, 'expired');
    assert.equal(after.payments.length, 0);
  });

  test('a payment to a cancelled invoice is recorded and reported, the invoice stays cancelled', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    const { call } = await import('../../helpers/till-server.ts');
    assert.equal((await call(f.till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: f.store.key })).status, 200);
    await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.amount_received_sats, 50_000);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.cancelled', 'invoice.payment_detected']);
  });

  for (const [confs, paidAfter] of [[0, 0], [1, 1], [6, 6]] as const) {
    test(`a store that needs ${confs} confirmation(s) is paid after ${paidAfter} block(s)`, async (t) => {
      const f = await startChainFixture(t, { confirmations: confs });
      const inv = await createInvoice(f);
      await f.node.pay(inv.address, 50_000);
      await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment');
      for (let mined = 0; mined < paidAfter; mined++) {
        assert.equal((await getInvoice(f, inv.id)).status, 'pending', `not paid at ${mined} confirmations`);
        await mineAndSync(f);
      }
      assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    });
  }

  test('IBD: live invoice creation answers 503 chain_syncing until the node is synced', async (t) => {
    const f = await startChainFixture(t);
    f.node.setIbd(true);
    await f.till.rt.chain!.requestSync(false, 'test');
    const { call } = await import('../../helpers/till-server.ts');
    const refused = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'chain_syncing');
    f.node.setIbd(false);
    await f.till.rt.chain!.requestSync(false, 'test');
    assert.equal((await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } })).status, 201);
  });
});
