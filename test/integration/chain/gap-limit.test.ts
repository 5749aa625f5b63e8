import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Transaction } from 'bitcoinjs-lib';
import { applyMempoolTx, loadWatchSet, reconcileMempool } from '../../../src/services/chain-payments.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { createInvoice, getInvoice, mineAndSync, startChainFixture } from './helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeNode } from './nodes.ts';

// DESIGN "Gap limit": Till counts the run of handed-out indexes after the last
// funded one. A payment that was replaced (RBF double spend) never funded the
// address: a wallet scanning the chain never sees it.

test('a replaced payment does not count as funding for the gap limit', async (t) => {
  const f = await startChainFixture(t, startFakeNode);
  const { ctx } = f.till.rt;
  // gap_limit 6: one unfunded address may be handed out (run reaches 6 - 5 = 1).
  addXpub(ctx, { storeId: f.store.storeId, env: 'live', key: testTpub(f.store.storeId), gapLimit: 6 });

  const a = await createInvoice(f);
  const txA = await f.node.pay(a.address, 50_000, { rbf: true });
  await waitFor(async () => (await getInvoice(f, a.id)).payments.length === 1, 'a in mempool');
  await f.node.replace(txA, { outputs: [] });
  await waitFor(async () => (await getInvoice(f, a.id)).payments[0].status === 'replaced', 'a replaced');
  await mineAndSync(f);
  assert.equal((await getInvoice(f, a.id)).amount_received_sats, 0, 'index 0 holds nothing');

  f.till.clock.advance(25 * 3600_000); // past the 24 h funding window
  const b = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
  const x = ctx.repos.xpubs.findActive(f.store.storeId, 'live')!;
  assert.equal(b.status, 409, `index 0 was never funded (its only payment was replaced), yet a second unfunded address was handed out: ${b.status}; last_funded_index=${x.lastFundedIndex}`);
  assert.equal(b.body.error.code, 'gap_limit_exceeded');
});

// A payment marked replaced because its transaction left the mempool (evicted,
// then re-broadcast; or the replacement itself dropped) and that comes back
// counts again: the index is funded again. recountFunding lowered the xpub's
// last funded index when it stopped counting; nothing raises it when it counts again.
test('a payment that stops counting and then counts again funds its index again', async (t) => {
  const till = await startTestTill(t, { env: { TILL_BITCOIND: 'false' } });
  const store = setupStore(till, { mode: 'live' });
  const { ctx } = till.rt;
  const res = await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 50_000 } });
  assert.equal(res.status, 201, res.text);
  const inv = ctx.repos.invoices.get(res.body.id)!;

  const tx = new Transaction();
  tx.addInput(Buffer.alloc(32, 7), 0);
  tx.addOutput(Buffer.from(inv.scriptHex, 'hex'), 50_000n);
  const watch = loadWatchSet(ctx, ctx.clock.now());

  applyMempoolTx(ctx, watch, tx, ctx.clock.now());
  const xpubId = inv.xpubId;
  assert.equal(ctx.repos.xpubs.get(xpubId)!.lastFundedIndex, inv.addressIndex, 'funded on first sight');

  reconcileMempool(ctx, () => false); // left the mempool: replaced
  assert.equal(ctx.repos.invoices.get(inv.id)!.payments[0]!.status, 'replaced');
  assert.equal(ctx.repos.xpubs.get(xpubId)!.lastFundedIndex, null, 'recounted: no longer funded');

  applyMempoolTx(ctx, watch, tx, ctx.clock.now()); // back in the mempool
  const p = ctx.repos.invoices.get(inv.id)!.payments[0]!;
  assert.equal(p.status, 'mempool', 'the payment counts again');
  const x = ctx.repos.xpubs.get(xpubId)!;
  assert.equal(x.lastFundedIndex, inv.addressIndex, `the payment counts again, yet the xpub's last funded index stays ${x.lastFundedIndex} (gap headroom too low, live invoices refused 409)`);
});
