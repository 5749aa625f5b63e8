import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, setupStore } from '../../helpers/till-server.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { mineAndSync, startChainFixture } from './helpers.ts';
import { startFakeNode } from './nodes.ts';

// Test invoices are driven by simulate, but their addresses come from the
// merchant's key like any other: real money sent to one must not go unseen
// (docs/CONFIG.md, "Network"). Recorded, and told with livemode false.

test('real money sent to a test invoice\'s address is recorded and pays it, its events marked livemode false', async (t) => {
  const f = await startChainFixture(t, startFakeNode);
  const shop = setupStore(f.till, { mode: 'test' });
  const created = await call(f.till, 'POST', '/v1/invoices', { key: shop.key, body: { amount_sats: 8_000 } });
  assert.equal(created.status, 201, created.text);
  const inv = created.body;
  assert.equal(inv.livemode, false);
  const get = async () => (await call(f.till, 'GET', `/v1/invoices/${inv.id}`, { key: shop.key })).body;
  const txid = await f.node.pay(inv.address, 8_000);
  await waitFor(async () => (await get()).amount_received_sats === 8_000, 'the payment recorded on the test invoice');
  await mineAndSync(f);
  const paid = await waitFor(async () => ((await get()).status === 'paid' ? get() : null), 'the test invoice paid by its block');
  assert.deepEqual(paid.payments.map((p: any) => [p.txid, p.status]), [[txid, 'confirmed']]);
  const events = f.till.rt.ctx.repos.events.listForInvoice(inv.id);
  assert.deepEqual(events.map((e) => [e.type, e.livemode]), [['invoice.created', false], ['invoice.payment_detected', false], ['invoice.paid', false]]);
});
