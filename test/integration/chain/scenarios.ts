import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { ManualClock } from '../../../src/clock.ts';
import { databasePath } from '../../../src/db/connection.ts';
import type { StoredInvoice } from '../../../src/db/invoices.ts';
import { joinUntil } from '../../../src/domain/invoice-state.ts';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { updateStore } from '../../../src/services/stores.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { failSyncDuring } from '../../helpers/held-sync.ts';
import { call, startTestTill } from '../../helpers/till-server.ts';
import { createInvoice, evictFromTillsNode, eventTypes, getInvoice, listInvoices, mineAndSync, nodeEnv, restartAndCatchUp, restartTill, startChainFixture, startWatching, synced, type NodeFactory } from './helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/**
 * The chain scenarios, end to end through HTTP, against any node: the fake
 * (test/integration/chain/fake-node.test.ts) and a real bitcoind -regtest
 * (real-bitcoind.test.ts). Scenarios that need a control only the fake has
 * (IBD, dropped ZMQ messages, RPC outage, pruning) run on the fake alone.
 */
export function defineChainScenarios(name: string, makeNode: NodeFactory): void {
  const fakeOnly = (f: { node: { fake?: unknown } }) => {
    if (!f.node.fake) throw new Error('fake-only scenario run on a real node');
    return f.node.fake as import('../../fakes/bitcoind/index.ts').FakeBitcoind;
  };
  const onFake = name === 'fake' ? test : test.skip;

  /** A 50,000 invoice of a store with a 10-minute late window, expired, then paid late: the payment is in the mempool. */
  const latePaymentInMempool = async (t: TestContext) => {
    const f = await startChainFixture(t, makeNode);
    updateStore(f.till.rt.ctx, f.store.storeId, { lateWindowMinutes: 10 });
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    f.till.clock.advance(6 * 60_000);
    await expireDueInvoices(f.till.rt.ctx);
    const txid = await f.node.pay(inv.address, 50_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'the late payment in the mempool');
    return { f, inv, txid };
  };

  describe(`chain scenarios (${name} node): payments`, () => {
  test('exact payment: detected in the mempool, paid at one confirmation', async (t) => {
    const f = await startChainFixture(t, makeNode);
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
    assert.equal(paid.payments[0].block_height, (await f.node.tip()).height);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
    await mineAndSync(f, 2);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 3, 'confirmations keep counting');
    // Blocks re-evaluate an invoice while its payments are 7 deep or less; counts move on after that.
    await mineAndSync(f, 5);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 8);
    assert.equal((await listInvoices(f)).data[0].payments[0].confirmations, 8);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 9, 'also once blocks no longer re-evaluate the invoice');
    assert.equal((await listInvoices(f)).data[0].payments[0].confirmations, 9, 'and on a list page');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid'], 'a payment is detected once, paid once');
  });

  test('two partial payments add up; overpayment is visible', async (t) => {
    const f = await startChainFixture(t, makeNode);
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
    const f = await startChainFixture(t, makeNode);
    const a = await createInvoice(f, { amount_sats: 10_000 });
    const b = await createInvoice(f, { amount_sats: 20_000 });
    await f.node.payMany([{ address: a.address, sats: 10_000 }, { address: b.address, sats: 20_000 }]);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, a.id)).status, 'paid');
    assert.equal((await getInvoice(f, b.id)).status, 'paid');
  });

  // On the fake alone: Core's wallet and raw-transaction RPCs refuse one address twice in a transaction.
  onFake('one transaction paying an invoice in three outputs: three payments that add up, one payment_detected naming the first', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 60_000 });
    const txid = await f.node.payMany([1, 2, 3].map(() => ({ address: inv.address, sats: 20_000 })));
    const seen = await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 3 && getInvoice(f, inv.id), 'three outputs');
    assert.equal(seen.amount_received_sats, 60_000);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected']);
    const { data } = JSON.parse(f.till.rt.ctx.repos.events.listForInvoice(inv.id)[1]!.body);
    assert.deepEqual([data.payment.txid, data.payment.vout], [txid, Math.min(...seen.payments.map((p: { vout: number }) => p.vout))]);
    // The named payment is its entry of the invoice's payments, every field of it.
    assert.deepEqual(data.payment, data.invoice.payments.find((p: { vout: number }) => p.vout === data.payment.vout));
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('coinbases paying two invoices in two blocks: immature, neither counts as confirmed nor replaces the other; one reorged out is replaced at once (no mempool to return to), the other pays at its 100th confirmation', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const a = await createInvoice(f);
    const b = await createInvoice(f);
    await f.node.mine(1, { to: a.address });
    await synced(f);
    const seenA = await getInvoice(f, a.id);
    assert.equal(seenA.status, 'pending', 'a coinbase cannot be spent before 100 confirmations: not paid at 1');
    assert.deepEqual([seenA.payments[0].status, seenA.payments[0].coinbase, seenA.payments[0].confirmations], ['confirmed', true, 1]);
    assert.ok(seenA.amount_received_sats >= 50_000);
    assert.equal(seenA.amount_confirmed_sats, 0);
    // Every coinbase "spends" the same null outpoint: that is no conflict between them.
    await f.node.mine(1, { to: b.address });
    await synced(f);
    const [pendingA, pendingB] = [await getInvoice(f, a.id), await getInvoice(f, b.id)];
    assert.equal(pendingB.status, 'pending');
    assert.equal(pendingA.payments[0].status, 'confirmed', 'the first coinbase still counts');
    assert.equal(pendingA.payments[0].confirmations, 2);
    assert.deepEqual(eventTypes(f, a.id), ['invoice.created', 'invoice.payment_detected']);
    const detected = JSON.parse(f.till.rt.ctx.repos.events.listForInvoice(a.id)[1]!.body).data.payment;
    assert.deepEqual([detected.coinbase, detected.confirmations], [true, 1], 'the webhook says the payment it names is a coinbase');
    // A coinbase reorged out never comes back: the second is lost at once (no wait for a mempool check), the first is not.
    await f.node.reorg(1, {});
    await synced(f);
    const [afterA, afterB] = [await getInvoice(f, a.id), await getInvoice(f, b.id)];
    assert.deepEqual([afterB.payments[0].status, afterB.amount_received_sats], ['replaced', 0]);
    assert.deepEqual(eventTypes(f, b.id), ['invoice.created', 'invoice.payment_detected']);
    assert.equal(afterA.payments[0].status, 'confirmed');
    // Mature at 100 confirmations: paid then, and only then.
    await mineAndSync(f, 99 - afterA.payments[0].confirmations);
    const immature = await getInvoice(f, a.id);
    assert.deepEqual([immature.status, immature.payments[0].confirmations, immature.amount_confirmed_sats], ['pending', 99, 0]);
    await mineAndSync(f);
    const paid = await getInvoice(f, a.id);
    assert.deepEqual([paid.status, paid.payments[0].confirmations, paid.amount_confirmed_sats], ['paid', 100, paid.amount_received_sats]);
    assert.deepEqual(eventTypes(f, a.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('a store with 0 confirmations counts an immature coinbase at once; its block reorged away reverses it at once', async (t) => {
    const f = await startChainFixture(t, makeNode, { confirmations: 0 });
    const inv = await createInvoice(f);
    await f.node.mine(1, { to: inv.address });
    await synced(f);
    const paid = await getInvoice(f, inv.id);
    assert.deepEqual([paid.status, paid.payments[0].coinbase, paid.amount_confirmed_sats], ['paid', true, paid.amount_received_sats]);
    await f.node.reorg(1, {});
    await synced(f);
    const reversed = await getInvoice(f, inv.id);
    assert.deepEqual([reversed.status, reversed.payments[0].status, reversed.amount_received_sats], ['paid', 'replaced', 0]);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid', 'invoice.payment_reversed']);
  });

  test('a coinbase reorged away counts again when a reorg back puts its block on the best chain, also after the invoice\'s window for new money: payment_restored', async (t) => {
    const f = await startChainFixture(t, makeNode, { confirmations: 0 });
    // No late window: the paid invoice's window for new money ends when it is paid.
    updateStore(f.till.rt.ctx, f.store.storeId, { lateWindowMinutes: 0 });
    const inv = await createInvoice(f);
    await f.node.mine(1, { to: inv.address });
    const { hash } = await f.node.tip();
    await synced(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    await f.node.reorg(1, {});
    await synced(f);
    assert.deepEqual((await getInvoice(f, inv.id)).payments.map((p: any) => p.status), ['replaced']);
    // A while later (the next sync prunes the watch set): the branch that held it overtakes again.
    f.till.clock.advance(10 * 60_000);
    await mineAndSync(f);
    await f.node.reorgBack(hash);
    await synced(f);
    const back = await getInvoice(f, inv.id);
    assert.deepEqual([back.status, back.payments[0].status, back.payments[0].coinbase, back.amount_received_sats > 0], ['paid', 'confirmed', true, true], 'its block is on the best chain again');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid', 'invoice.payment_reversed', 'invoice.payment_restored']);
  });

  test('an output of 0 sats to an invoice address, mined without the mempool: no payment, and the chain is read on past it', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const target = await createInvoice(f);
    const other = await createInvoice(f);
    // Consensus-valid, if non-standard: anyone may get it mined to an address shown on a checkout page.
    await f.node.mineTx([{ address: target.address, sats: 0 }]);
    await synced(f);
    assert.deepEqual((await getInvoice(f, target.id)).payments, []);
    assert.deepEqual(eventTypes(f, target.id), ['invoice.created']);
    assert.equal(f.till.rt.chain!.health().error, null);
    await f.node.pay(other.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, other.id)).status, 'paid');
  });

  test('underpayment then expiry: expired with the amount received', async (t) => {
    const f = await startChainFixture(t, makeNode);
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
    const f = await startChainFixture(t, makeNode);
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

  test('a payment seen inside the late window and mined after it stays recorded, confirmed, not replaced', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    f.till.clock.advance(5 * 60_000);
    await expireDueInvoices(f.till.rt.ctx);
    f.till.clock.advance(7 * 24 * 3600_000 - 60_000);
    const txid = await f.node.pay(inv.address, 50_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment inside the window');
    // The window ends while the payment waits for a block; a sync prunes what is no longer watched.
    f.till.clock.advance(2 * 60_000);
    await f.till.rt.chain!.requestSync(false, 'test');
    await mineAndSync(f);
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'expired', 'confirmed after the window: too late to pay it');
    assert.deepEqual(after.payments.map((p: { txid: string; status: string }) => [p.txid, p.status]), [[txid, 'confirmed']]);
    assert.equal(after.amount_received_sats, 50_000, 'the money is still shown, to be refunded');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.expired', 'invoice.payment_detected']);
  });

  // Its watch ends at paid_at, before the syncs that bury its payment: a watch set pruned only of
  // watches ending since the last prune kept such invoices in memory until a restart.
  test('a store without a late window: a paid invoice leaves the watch set once its payment is 6 deep', async (t) => {
    const f = await startChainFixture(t, makeNode);
    updateStore(f.till.rt.ctx, f.store.storeId, { lateWindowMinutes: 0 });
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment');
    const watched = () => f.till.rt.chain!.health().watched_addresses;
    await mineAndSync(f, 5);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    assert.equal(watched(), 1, 'watched while a reorg could still take its payment');
    await mineAndSync(f);
    assert.equal(watched(), 0);
    assert.equal(f.till.rt.ctx.repos.invoices.countWatched(f.till.clock.now()), 0);
  });

  for (const restart of ['', 'Till restarted', 'Till upgraded from a version that kept a shorter watch'] as const) {
    test(`a late payment Till's node dropped from its mempool after the late window, mined after all${restart ? ` (${restart} in between)` : ''}: it counts again`, async (t) => {
      const { f, inv, txid } = await latePaymentInMempool(t);
      f.till.clock.advance(15 * 60_000);
      // Evicted from Till's node (a full mempool); a miner kept it.
      evictFromTillsNode(t, txid);
      await f.till.rt.chain!.requestSync(false, 'test');
      assert.equal((await getInvoice(f, inv.id)).payments[0].status, 'replaced');
      let rt = f.till.rt;
      if (restart) {
        const stored = rt.ctx.repos.invoices.get(inv.id)!;
        await rt.stop();
        if (restart !== 'Till restarted') {
          // What that version wrote: the end of the window for new money, and no sign of the new rule.
          const db = new Database(databasePath(f.till.config.dataDir));
          db.prepare('UPDATE invoices SET watch_until = ? WHERE id = ?').run(joinUntil(stored), inv.id);
          db.prepare("DELETE FROM meta WHERE key = 'replaced_watch_ends_settled'").run();
          db.close();
        }
        rt = await restartAndCatchUp(t, f);
      }
      await f.node.mine(1);
      await waitFor(() => rt.ctx.repos.invoices.get(inv.id)!.payments[0]!.status === 'confirmed', 'mined after all');
      const after = rt.ctx.repos.invoices.get(inv.id)!;
      assert.equal(after.status, 'expired', 'confirmed after the late window: too late to pay it');
      assert.equal(after.payments[0]!.txid, txid);
      assert.equal(after.payments[0]!.amountSats, 50_000, 'the money is shown again, to be refunded');
    });
  }

  for (const restart of [false, true]) {
    test(`a late payment fee-bumped 13 days on, the bump dropped by Till's node, mined on day 14.5${restart ? ' (Till restarted in between)' : ''}: it counts again`, async (t) => {
      const { f, inv, txid } = await latePaymentInMempool(t);
      f.till.clock.advance(13 * DAY);
      const bumped = await f.node.replace(txid);
      await waitFor(() => f.till.rt.ctx.repos.invoices.get(inv.id)!.payments.some((p) => p.txid === bumped && p.status === 'mempool'), 'the bump seen');
      await f.till.rt.chain!.idle();
      f.till.clock.advance(12 * HOUR);
      // Evicted from Till's node (a full mempool); a miner took it on day 13, and nodes keep it 14 days from then.
      evictFromTillsNode(t, bumped);
      await f.till.rt.chain!.requestSync(false, 'test');
      const dropped = f.till.rt.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual(Object.fromEntries(dropped.payments.map((p) => [p.txid, p.status])), { [txid]: 'replaced', [bumped]: 'replaced' });
      assert.ok(dropped.payments.every((p) => p.firstSeenAt < f.till.clock.now() - 13 * DAY), 'the bump keeps the first sighting of what it replaced');
      f.till.clock.advance(DAY);
      let rt = f.till.rt;
      if (restart) {
        await rt.stop();
        rt = await restartAndCatchUp(t, f);
      } else {
        await rt.chain!.requestSync(false, 'the re-sync timer, which also ends watches');
      }
      await f.node.mine(1);
      await waitFor(() => rt.ctx.repos.invoices.get(inv.id)!.payments.some((p) => p.txid === bumped && p.status === 'confirmed'), 'the bump mined after all');
      const after = rt.ctx.repos.invoices.get(inv.id)!;
      assert.equal(after.status, 'expired', 'confirmed after the late window: too late to pay it');
      assert.deepEqual(after.payments.filter((p) => p.status !== 'replaced').map((p) => [p.txid, p.amountSats]), [[bumped, 50_000]], 'the money is shown again, to be refunded');
    });
  }

  test('a payment to a cancelled invoice is recorded and reported, the invoice stays cancelled', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
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
      const f = await startChainFixture(t, makeNode, { confirmations: confs });
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

  onFake('IBD: live invoice creation answers 503 chain_syncing until the node is synced', async (t) => {
    const f = await startChainFixture(t, makeNode);
    fakeOnly(f).setIbd(true);
    await f.till.rt.chain!.requestSync(false, 'test');
    const refused = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, 'chain_syncing');
    fakeOnly(f).setIbd(false);
    await f.till.rt.chain!.requestSync(false, 'test');
    assert.equal((await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } })).status, 201);
  });
  });

  describe(`chain scenarios (${name} node): replaced, reorged and missed payments`, () => {
  test('RBF before confirmation: the replaced payment stops counting; the replacement, if it pays, counts', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const a = await createInvoice(f);
    const b = await createInvoice(f);
    const txA = await f.node.pay(a.address, 50_000, { rbf: true });
    const txB = await f.node.pay(b.address, 50_000, { rbf: true });
    await waitFor(async () => (await getInvoice(f, a.id)).payments.length === 1 && (await getInvoice(f, b.id)).payments.length === 1, 'both in mempool');
    // a: the buyer double-spends the payment back to their wallet. b: bumps the fee, still paying.
    await f.node.replace(txA, { outputs: [] });
    const txB2 = await f.node.replace(txB);
    await waitFor(async () => (await getInvoice(f, a.id)).payments[0].status === 'replaced', 'a replaced');
    await mineAndSync(f);
    const ia = await getInvoice(f, a.id);
    assert.equal(ia.status, 'pending');
    assert.equal(ia.amount_received_sats, 0);
    assert.equal(ia.payments[0].txid, txA);
    const ib = await getInvoice(f, b.id);
    assert.equal(ib.status, 'paid');
    const byTxid = Object.fromEntries(ib.payments.map((p: any) => [p.txid, p.status]));
    assert.deepEqual(byTxid, { [txB]: 'replaced', [txB2]: 'confirmed' });
  });

  /** A 0-conf store's 50,000 invoice paid 30,000 (replaceable), seen in the mempool. */
  const underpaidZeroConf = async (t: TestContext) => {
    const f = await startChainFixture(t, makeNode, { confirmations: 0 });
    const inv = await createInvoice(f);
    const original = await f.node.pay(inv.address, 30_000, { rbf: true });
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment');
    return { f, inv, original };
  };

  /** A 50,000 invoice due in 5 minutes, paid on time (replaceable), `mined` or not, 10 minutes on: it waits past its expiry. */
  const stuckPastExpiry = async (t: TestContext, opts: { confirmations?: number; mined?: boolean } = {}) => {
    const f = await startChainFixture(t, makeNode, { confirmations: opts.confirmations });
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    const txid = await f.node.pay(inv.address, 50_000, { rbf: true });
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment');
    if (opts.mined) await mineAndSync(f);
    f.till.clock.advance(10 * 60_000);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0, 'it waits for its on-time payment');
    return { f, inv, txid };
  };

  // A 0-conf store counts unconfirmed payments: were the replaced one to count until the next mempool check,
  // 30,000 and its 30,000 fee bump would cover a 50,000 invoice (invoice.paid: "fulfil the order here").
  test('0 conf: a fee-bumped underpayment never pays the invoice; the bump counts in place of what it replaced', async (t) => {
    const { f, inv, original } = await underpaidZeroConf(t);
    const bumped = await f.node.replace(original);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 2, 'the bump seen');
    await f.till.rt.chain!.requestSync(true, 'test');
    const after = await getInvoice(f, inv.id);
    assert.deepEqual(Object.fromEntries(after.payments.map((p: any) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: 'mempool' });
    assert.equal(after.status, 'pending');
    assert.equal(after.amount_received_sats, 30_000);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected']);
  });

  test('0 conf: an underpayment a reorg put back in the mempool, then fee-bumped, never pays the invoice', async (t) => {
    const { f, inv, original } = await underpaidZeroConf(t);
    await mineAndSync(f);
    await f.node.reorg(1, { leaveInMempool: [original] });
    await synced(f);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments[0].status === 'mempool', 'back in the mempool');
    const bumped = await f.node.replace(original);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 2, 'the bump seen');
    const after = await getInvoice(f, inv.id);
    assert.deepEqual(Object.fromEntries(after.payments.map((p: any) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: 'mempool' });
    assert.equal(after.status, 'pending');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected']);
  });

  test('0 conf: an unconfirmed payment known from before Till kept what payments spend (migration 0007), fee-bumped after a restart, never pays the invoice', async (t) => {
    const { f, inv, original } = await underpaidZeroConf(t);
    await f.till.rt.stop();
    const db = new Database(databasePath(f.till.config.dataDir));
    db.exec('DELETE FROM payment_spends');
    db.close();
    const rt2 = await restartAndCatchUp(t, f);
    const bumped = await f.node.replace(original);
    await waitFor(async () => rt2.ctx.repos.invoices.get(inv.id)!.payments.length === 2, 'the bump seen');
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual(Object.fromEntries(stored.payments.map((p) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: 'mempool' });
    assert.equal(stored.status, 'pending');
  });

  test('0 conf, Till down while a reorg puts a mined underpayment back in the mempool and it is fee-bumped: on start it is one payment of 30,000', async (t) => {
    const { f, inv, original } = await underpaidZeroConf(t);
    await mineAndSync(f);
    await f.till.rt.stop();
    await f.node.reorg(1, { leaveInMempool: [original] });
    const bumped = await f.node.replace(original);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual(Object.fromEntries(stored.payments.map((p) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: 'mempool' });
    assert.equal(stored.status, 'pending');
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected']);
  });

  test('Till down while a reorg puts an on-time payment (1 of 2 confirmations) back in the mempool, fee-bumped and mined: on time, paid', async (t) => {
    const { f, inv, txid: original } = await stuckPastExpiry(t, { confirmations: 2, mined: true });
    await f.till.rt.stop();
    await f.node.reorg(1, { leaveInMempool: [original] });
    const bumped = await f.node.replace(original);
    await f.node.mine(2);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual(Object.fromEntries(stored.payments.map((p) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: 'confirmed' });
    assert.equal(stored.status, 'paid');
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  for (const mined of [false, true]) {
    test(`0 conf, Till down while an underpayment is fee-bumped${mined ? ' and the bump mined' : ''}: on start it is one payment of 30,000, not two`, async (t) => {
      const { f, inv, original } = await underpaidZeroConf(t);
      await f.till.rt.stop();
      const bumped = await f.node.replace(original);
      if (mined) await f.node.mine(1);
      const rt2 = await restartAndCatchUp(t, f);
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual(Object.fromEntries(stored.payments.map((p) => [p.txid, p.status])), { [original]: 'replaced', [bumped]: mined ? 'confirmed' : 'mempool' });
      assert.equal(stored.status, 'pending');
      assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected']);
    });
  }

  for (const down of [false, true]) {
    test(`an on-time payment stuck past the expiry and fee-bumped then${down ? ' (mined while Till is down)' : ''} is as on time as it was: paid, never expired`, async (t) => {
      const { f, inv, txid } = await stuckPastExpiry(t);
      let rt = f.till.rt;
      if (down) await rt.stop();
      const bumped = await f.node.replace(txid);
      if (down) {
        await f.node.mine(1);
        rt = restartTill(t, f);
        rt.chain!.start();
        await rt.chain!.idle();
      } else {
        await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 2, 'the bump seen');
        assert.equal((await getInvoice(f, inv.id)).status, 'pending');
        await mineAndSync(f);
      }
      const paid = rt.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual(Object.fromEntries(paid.payments.map((p) => [p.txid, p.status])), { [txid]: 'replaced', [bumped]: 'confirmed' });
      assert.equal(paid.status, 'paid');
      assert.deepEqual(rt.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
    });
  }

  onFake('a replacement that pays more than the on-time payment it replaced, after the expiry, is new money: late', async (t) => {
    const { f, inv, txid } = await stuckPastExpiry(t);
    await fakeOnly(f).replace(txid, { outputs: [{ address: inv.address, sats: 60_000 }] });
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 2, 'the replacement seen');
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'late_paid');
  });

  // ZMQ loses messages (Core's doc/zmq.md): the bump's rawtx may never come, or come after the
  // re-sync its removal started has found the original gone from the mempool.
  onFake('an on-time payment stuck past the expiry and fee-bumped, the bump\'s rawtx lost: the mempool check finds the bump; paid, never expired', async (t) => {
    const { f, inv, txid } = await stuckPastExpiry(t);
    fakeOnly(f).dropZmq((m) => m.topic === 'rawtx');
    const bumped = await f.node.replace(txid);
    fakeOnly(f).dropZmq(null);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.some((p: any) => p.txid === txid && p.status === 'replaced'), 'the original found gone');
    await f.till.rt.chain!.idle();
    const waiting = await getInvoice(f, inv.id);
    assert.deepEqual(Object.fromEntries(waiting.payments.map((p: any) => [p.txid, p.status])), { [txid]: 'replaced', [bumped]: 'mempool' });
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0, 'it waits for the bump, as on time as what it replaced');
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  onFake('a replacement paying more, sent before the expiry, its ZMQ messages lost, found by the check after the expiry: first seen when the node took it, paid', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const start = f.till.clock.now();
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    const txid = await f.node.pay(inv.address, 50_000, { rbf: true });
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment');
    f.till.clock.advance(4 * 60_000);
    fakeOnly(f).dropZmq((m) => m.topic === 'rawtx' || m.topic === 'sequence');
    const replacement = await fakeOnly(f).replace(txid, { outputs: [{ address: inv.address, sats: 60_000 }] });
    fakeOnly(f).dropZmq(null);
    // The next check (the 30 s timer) runs after the expiry.
    f.till.clock.advance(2 * 60_000);
    await f.till.rt.chain!.requestSync(false, 'timer');
    await expireDueInvoices(f.till.rt.ctx);
    const waiting = await getInvoice(f, inv.id);
    assert.equal(waiting.status, 'pending', 'on-time payments cover it: it waits for their block');
    const seen = waiting.payments.find((p: any) => p.txid === replacement);
    assert.equal(seen.first_seen_at, new Date(Math.floor((start + 4 * 60_000) / 1000) * 1000).toISOString(), 'the node\'s entry time (whole seconds)');
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
  });

  for (const how of ['double-spent in the mempool', 'double-spent by a reorg'] as const) {
    test(`an invoice waiting past its expiry for an on-time payment ${how} while Till is down: expired when Till learns it, late window from then`, async (t) => {
      const reorg = how === 'double-spent by a reorg';
      const { f, inv, txid } = await stuckPastExpiry(t, { confirmations: reorg ? 2 : 1, mined: reorg }); // mined: 1 of 2 confirmations
      await f.till.rt.stop();
      f.till.clock.advance(6 * DAY);
      if (reorg) await f.node.reorg(1, { dropTxids: [txid] });
      else await f.node.replace(txid, { outputs: [] });
      f.till.clock.advance(2 * DAY);
      const learned = f.till.clock.now();
      const rt2 = await restartAndCatchUp(t, f);
      await expireDueInvoices(rt2.ctx);
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual([stored.status, stored.payments.map((p) => p.status)], ['expired', ['replaced']]);
      assert.equal(stored.expiredAt, learned, 'not expires_at: the late window would have ended before Till came back');
      // A day later, inside the late window that opened then: a payment makes it late_paid.
      f.till.clock.advance(DAY);
      await f.node.pay(inv.address, 50_000);
      await f.node.mine(reorg ? 2 : 1);
      await rt2.chain!.requestSync(false, 'test');
      assert.equal(rt2.ctx.repos.invoices.get(inv.id)!.status, 'late_paid');
    });
  }

  test('a reorg un-confirms a payment and a later block re-confirms it', async (t) => {
    const f = await startChainFixture(t, makeNode, { confirmations: 2 });
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 1);
    await f.node.reorg(1, { leaveInMempool: [txid] });
    await synced(f);
    const back = await getInvoice(f, inv.id);
    assert.equal(back.payments[0].status, 'mempool');
    assert.equal(back.status, 'pending');
    await mineAndSync(f, 2);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
  });

  test('a reorg that drops a payment after paid: the invoice stays paid and payment_reversed is sent once', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    await f.node.reorg(1, { dropTxids: [txid] });
    await synced(f);
    await f.till.rt.chain!.requestSync(true, 'test');
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'paid', 'a paid invoice stays paid');
    assert.equal(after.payments[0].status, 'replaced');
    assert.equal(after.amount_confirmed_sats, 0);
    await mineAndSync(f, 2);
    const types = eventTypes(f, inv.id);
    assert.equal(types.filter((x) => x === 'invoice.payment_reversed').length, 1, types.join(','));
  });

  // One switch to a longer branch (a real node's invalidateblock shows the shorter chain in between, with the payment back in its mempool).
  onFake('a reorg whose new branch double-spends a paid invoice\'s payment: the payment_reversed sent says it was replaced, not back in the mempool', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    await f.node.reorg(1, { dropTxids: [txid] });
    await synced(f);
    const reversal = f.till.rt.ctx.repos.events.listForInvoice(inv.id).find((e) => e.type === 'invoice.payment_reversed');
    assert.ok(reversal, eventTypes(f, inv.id).join(','));
    const told = JSON.parse(reversal.body).data.invoice;
    assert.deepEqual([told.status, told.amount_received_sats, told.payments.map((p: any) => p.status)], ['paid', 0, ['replaced']]);
  });

  onFake('a reorg whose new branch lacks a paid invoice\'s payment, which the node did not take back into its mempool (its policy, a full mempool): no proof of a loss, payment_reversed shows it unconfirmed', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    evictFromTillsNode(t, txid);
    await f.node.reorg(1, { leaveInMempool: [txid] });
    await synced(f);
    const reversal = f.till.rt.ctx.repos.events.listForInvoice(inv.id).find((e) => e.type === 'invoice.payment_reversed');
    assert.ok(reversal, eventTypes(f, inv.id).join(','));
    const told = JSON.parse(reversal.body).data.invoice;
    assert.deepEqual([told.amount_received_sats, told.payments.map((p: any) => p.status)], [50_000, ['mempool']]);
  });

  test('a reorg that puts a paid invoice\'s payment back in the mempool, then a block mining it: payment_reversed, then payment_restored naming it, once each', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    await f.node.reorg(1, { leaveInMempool: [txid] });
    await synced(f);
    assert.deepEqual(eventTypes(f, inv.id).slice(-1), ['invoice.payment_reversed']);
    await mineAndSync(f);
    await mineAndSync(f);
    const events = f.till.rt.ctx.repos.events.listForInvoice(inv.id);
    assert.deepEqual(events.map((e) => e.type).filter((x) => x.endsWith('_reversed') || x.endsWith('_restored')), ['invoice.payment_reversed', 'invoice.payment_restored']);
    const { invoice, payment } = JSON.parse(events.at(-1)!.body).data;
    assert.deepEqual([invoice.status, invoice.amount_confirmed_sats, payment.txid, payment.status], ['paid', 50_000, txid, 'confirmed']);
  });

  onFake('a node restarted behind the blocks Till has read (a crash before it flushed): nothing rolled back, no payment_reversed; Till waits, and says so', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    await mineAndSync(f, 2);
    f.node.fake!.fallBehind(2);
    await f.till.rt.chain!.requestSync(true, 'test');
    const health = f.till.rt.health().chain as any;
    assert.equal(health.status, 'syncing');
    assert.match(health.error, /behind the blocks Till has read .*waiting for it to catch up/);
    const waiting = await getInvoice(f, inv.id);
    assert.deepEqual([waiting.status, waiting.amount_confirmed_sats, waiting.payments.map((p: any) => p.status)], ['paid', 50_000, ['confirmed']]);
    await f.node.fake!.catchUp();
    // The same blocks again: Till's tip is the node's at once, and the next sync (the blocks' ZMQ) finds it so.
    await f.till.rt.chain!.requestSync(false, 'test');
    assert.equal((f.till.rt.health().chain as any).status, 'synced');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  onFake('while the node is in initial block download, a live invoice does not expire (the blocks it has not yet may pay it on time)', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    f.node.fake!.setIbd(true);
    await f.till.rt.chain!.requestSync(true, 'test');
    f.till.clock.advance(DAY);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0);
    assert.equal((await getInvoice(f, inv.id)).status, 'pending');
    f.node.fake!.setIbd(false);
    await f.till.rt.chain!.requestSync(true, 'test');
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
  });

  onFake('a running Till reads a reorg double-spending the on-time payment an invoice waits for past its expiry: expired now, late window from now', async (t) => {
    const { f, inv, txid } = await stuckPastExpiry(t, { confirmations: 2, mined: true }); // 1 of 2 confirmations
    f.till.clock.advance(60_000);
    const learned = f.till.clock.now();
    await f.node.reorg(1, { dropTxids: [txid] });
    await synced(f);
    const stored = f.till.rt.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual([stored.status, stored.expiredAt, stored.payments.map((p) => p.status)], ['expired', learned, ['replaced']]);
  });

  // A real node's reorg by invalidateblock shows the shorter chain in between: on the fake it is one switch, as in Core.
  onFake('a reorg whose new branch mines the payment again: the invoice stays paid, no payment_reversed', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    const before = f.till.rt.ctx.repos.invoices.get(inv.id)!;
    await f.node.reorg(1, {});
    const tip = await f.node.tip();
    await synced(f);
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'paid');
    assert.equal(after.payments[0].status, 'confirmed');
    const stored = f.till.rt.ctx.repos.invoices.get(inv.id)!.payments[0]!;
    assert.equal(stored.blockHash, f.till.rt.ctx.repos.chainBlocks.get(stored.blockHeight!)!.hash, 'confirmed in the new branch');
    assert.notEqual(stored.blockHash, before.payments[0]!.blockHash);
    assert.equal(after.payments[0].confirmations, tip.height - after.payments[0].block_height + 1);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  onFake('a reorg that mines again the payment of an invoice no longer watched: it stays confirmed', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    f.till.clock.advance(5 * 60_000);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
    // Paid inside the late window, seen in the mempool; mined after the window ended: its watch ends with the block.
    f.till.clock.advance(7 * DAY - 60_000);
    const txid = await f.node.pay(inv.address, 50_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'mempool payment inside the window');
    f.till.clock.advance(2 * 60_000);
    await mineAndSync(f);
    await f.till.rt.chain!.requestSync(false, 'test');
    assert.deepEqual((await getInvoice(f, inv.id)).payments.map((p: any) => [p.txid, p.status]), [[txid, 'confirmed']]);
    await f.node.reorg(1, {});
    await synced(f);
    await f.till.rt.chain!.requestSync(false, 'test');
    const after = await getInvoice(f, inv.id);
    assert.deepEqual(after.payments.map((p: any) => [p.txid, p.status]), [[txid, 'confirmed']], 'mined again in the new branch');
    assert.equal(after.amount_received_sats, 50_000);
  });

  onFake('a reorg deeper than the blocks Till keeps (just after its first start): the new branch is read, its payment counts', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const first = f.till.rt.ctx.repos.chainBlocks.tip()!;
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    // The fork point is below the first block Till stored.
    await f.node.reorg(2, {});
    const tip = await f.node.tip();
    await synced(f);
    await f.till.rt.chain!.requestSync(true, 'test');
    const after = await getInvoice(f, inv.id);
    assert.equal(after.payments[0].status, 'confirmed');
    assert.equal(after.payments[0].confirmations, tip.height - after.payments[0].block_height + 1);
    assert.equal(after.amount_confirmed_sats, 50_000);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
    // Every block of the new branch from Till's first one up is recorded.
    for (let h = first.height; h <= tip.height; h++) assert.ok(f.till.rt.ctx.repos.chainBlocks.get(h), `block ${h} recorded`);
    assert.equal(f.till.rt.ctx.repos.chainBlocks.tip()!.hash, tip.hash);
  });

  onFake('every second ZMQ rawtx dropped: every payment is still found', async (t) => {
    const f = await startChainFixture(t, makeNode);
    let n = 0;
    fakeOnly(f).dropZmq((m) => m.topic === 'rawtx' && n++ % 2 === 1);
    const invoices = [];
    for (let i = 0; i < 6; i++) invoices.push(await createInvoice(f));
    for (const inv of invoices) await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    await f.till.rt.chain!.idle();
    for (const inv of invoices) assert.equal((await getInvoice(f, inv.id)).status, 'paid', inv.id);
  });

  test('Till down while 20 blocks with payments are mined: all found on start', async (t) => {
    const f = await startChainFixture(t, makeNode);
    // 20 unpaid invoices in a row: raise the gap limit as the merchant's wallet would be set.
    const xpub = f.till.rt.ctx.repos.xpubs.findActive(f.store.storeId, 'live')!;
    addXpub(f.till.rt.ctx, { storeId: f.store.storeId, env: 'live', key: xpub.keyText, gapLimit: 100 });
    const invoices = [];
    for (let i = 0; i < 20; i++) invoices.push(await createInvoice(f));
    await f.till.rt.stop();
    for (const inv of invoices) {
      await f.node.pay(inv.address, 50_000);
      await f.node.mine(1);
    }
    const rt2 = restartTill(t, f);
    assert.equal(rt2.ctx.chain.caughtUp, false, 'no live invoice expires before the first catch-up');
    rt2.chain!.start();
    await rt2.chain!.idle();
    assert.equal(rt2.ctx.chain.caughtUp, true);
    for (const inv of invoices) {
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.equal(stored.status, 'paid', inv.id);
      assert.ok(stored.payments[0]!.firstSeenAt < stored.expiresAt, 'a payment mined while Till was down counts from its block time');
    }
  });

  test('Till down while two on-time partial payments are mined in two blocks: paid on start, never expired on the way', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    await f.till.rt.stop();
    await f.node.pay(inv.address, 30_000);
    await f.node.mine(1);
    await f.node.pay(inv.address, 20_000);
    await f.node.mine(1);
    f.till.clock.advance(20 * 60_000);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'paid');
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  for (const ended of ['cancelled', 'expired'] as const) {
    test(`Till down past the watch window of a ${ended} invoice: a payment mined inside the window is recorded on start, one mined after it is not`, async (t) => {
      const f = await startChainFixture(t, makeNode);
      const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
      if (ended === 'cancelled') assert.equal((await call(f.till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: f.store.key })).status, 200);
      else {
        f.till.clock.advance(5 * 60_000);
        assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
      }
      await f.till.rt.stop();
      // Day 1 of the 7-day window: the buyer pays anyway (late, or money to refund), mined at once and buried 6 deep;
      // Till comes back on day 9.
      f.till.clock.advance(DAY);
      const txid = await f.node.pay(inv.address, 50_000);
      await f.node.mine(6);
      f.till.clock.advance(7 * DAY + HOUR);
      // Mined after the window (of the cancellation, or of the late payment), still while Till is down: a running
      // Till would no longer have watched it.
      await f.node.pay(inv.address, 20_000);
      await f.node.mine(1);
      const rt2 = await restartAndCatchUp(t, f);
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual(stored.payments.map((p) => [p.txid, p.status]), [[txid, 'confirmed']]);
      // Mined and confirmed inside the window: an expired invoice is late_paid, as a running Till would have made it.
      assert.equal(stored.status, ended === 'expired' ? 'late_paid' : 'cancelled');
      assert.ok(rt2.ctx.repos.events.listForInvoice(inv.id).some((e) => e.type === 'invoice.payment_detected'), 'the merchant is told');
      // Caught up, the window over: the address is watched no more.
      await f.node.pay(inv.address, 10_000);
      await rt2.chain!.requestSync(true, 'test');
      assert.equal(rt2.ctx.repos.invoices.get(inv.id)!.payments.length, 1);
    });
  }

  onFake('Till down: an on-time payment still in the mempool and a late one mined: the invoice waits for the on-time one, paid, never expired', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    await f.till.rt.stop();
    f.till.clock.advance(60_000);
    const onTime = await f.node.pay(inv.address, 50_000);
    f.till.clock.advance(DAY);
    const late = await f.node.pay(inv.address, 50_000);
    // Only the late payment is mined while Till is down (the on-time one waits in the mempool, as a low fee would).
    await fakeOnly(f).mine(1, { include: [late] });
    const rt2 = await restartAndCatchUp(t, f);
    const caughtUp = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.equal(caughtUp.status, 'pending', 'a running Till would be waiting for the on-time payment');
    assert.deepEqual(caughtUp.payments.map((p) => [p.txid, p.status]).sort(), [[onTime, 'mempool'], [late, 'confirmed']].sort());
    await fakeOnly(f).mine(1, { include: [onTime] });
    await rt2.chain!.requestSync(false, 'test');
    assert.equal(rt2.ctx.repos.invoices.get(inv.id)!.status, 'paid');
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  // 0 confirmations: a mempool payment pays at once, so the start's mempool pass judges like a block.
  onFake('0 confirmations, Till down: an on-time payment mined and a late one still in the mempool: paid at the block, never expired', async (t) => {
    const f = await startChainFixture(t, makeNode, { confirmations: 0 });
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 30 });
    await f.till.rt.stop();
    f.till.clock.advance(60_000);
    const onTime = await f.node.pay(inv.address, 50_000);
    await fakeOnly(f).mine(1, { include: [onTime] });
    f.till.clock.advance(DAY);
    await f.node.pay(inv.address, 50_000);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'paid');
    assert.equal(stored.paidAt, stored.payments.find((p) => p.txid === onTime)!.firstSeenAt);
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.paid']);
  });

  for (const [name, expiresInMinutes, expireFirst, sentAfter, downFor, status] of [
    ['a late payment sent on day 1 of the window, Till back after it: late_paid', 5, true, DAY, 7 * DAY, 'late_paid'],
    ['an on-time payment still unmined two days later: paid as of when the node first had it', 30, false, 60_000, 2 * DAY, 'paid'],
  ] as const) {
    test(`0 confirmations, Till down: ${name}`, async (t) => {
      const f = await startChainFixture(t, makeNode, { confirmations: 0 });
      const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: expiresInMinutes });
      if (expireFirst) {
        f.till.clock.advance(expiresInMinutes * 60_000);
        assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
      }
      await f.till.rt.stop();
      f.till.clock.advance(sentAfter);
      await f.node.pay(inv.address, 50_000);
      f.till.clock.advance(downFor);
      const rt2 = await restartAndCatchUp(t, f);
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.equal(stored.status, status);
      // Judged as of the node's first sight of it (its mempool entry time), as a running Till would have.
      assert.equal(stored.paidAt, stored.payments[0]!.firstSeenAt);
    });
  }

  for (const underpaid of [0, 20_000]) {
    test(`Till down from before expiry to past the late window: a payment mined only after the window is not recorded${underpaid ? ' (underpaid on time)' : ''}`, async (t) => {
      const f = await startChainFixture(t, makeNode);
      const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
      if (underpaid) {
        await f.node.pay(inv.address, underpaid);
        await mineAndSync(f);
      }
      await f.till.rt.stop();
      f.till.clock.advance(8 * DAY + HOUR);
      await f.node.pay(inv.address, 50_000 - underpaid);
      await f.node.mine(1);
      const rt2 = await restartAndCatchUp(t, f);
      await expireDueInvoices(rt2.ctx);
      const stored = rt2.ctx.repos.invoices.get(inv.id)!;
      // A running Till had expired it and stopped watching at the end of the late window: no more money, no webhook.
      assert.equal(stored.status, 'expired');
      assert.deepEqual(stored.payments.map((p) => p.amountSats), underpaid ? [underpaid] : []);
      assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', ...(underpaid ? ['invoice.payment_detected'] : []), 'invoice.expired']);
    });
  }

  test('Till down from before expiry to past the late window: a late payment confirmed inside the window makes the invoice late_paid', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    await f.till.rt.stop();
    f.till.clock.advance(DAY);
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(1);
    f.till.clock.advance(7 * DAY);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'late_paid');
    assert.equal(stored.expiredAt, stored.expiresAt);
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.expired', 'invoice.late_paid']);
  });

  onFake('a payment seen in the mempool keeps that sighting as its first seen once mined, even in a block stamped before it', async (t) => {
    const f = await startChainFixture(t, makeNode);
    // Half a second into a second, past the stamps of the fixture's quickly mined blocks: the next block, stamped
    // in whole seconds, is dated before the sighting.
    f.till.clock.set(Math.floor(f.till.clock.now() / 1000) * 1000 + 600_500);
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    const seen = await waitFor(async () => (await getInvoice(f, inv.id)).payments[0], 'the mempool payment');
    assert.equal(Date.parse(seen.first_seen_at) % 1000, 500);
    await mineAndSync(f);
    const paid = await getInvoice(f, inv.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.payments[0].first_seen_at, seen.first_seen_at, 'Till saw it before its block: the block\'s earlier stamp does not move it back');
  });

  onFake('a payment first found in a block is dated at the block\'s time, also when the block\'s rawtx reached Till first', async (t) => {
    const nodeClock = new ManualClock(Date.now());
    const f = await startChainFixture(t, () => makeNode(nodeClock));
    const start = f.till.clock.now();
    nodeClock.set(start);
    const inv = await createInvoice(f);
    // The buyer's transaction reaches the miner, not Till (its mempool rawtx is lost).
    fakeOnly(f).dropZmq((m) => m.topic === 'rawtx');
    const txid = await f.node.pay(inv.address, 50_000);
    fakeOnly(f).dropZmq(null);
    // Mined in a block stamped minute 2, which reaches Till at minute 3: Core sends the block's rawtx before its hashblock.
    nodeClock.set(start + 2 * 60_000);
    f.till.clock.set(start + 3 * 60_000);
    await mineAndSync(f);
    const paid = await getInvoice(f, inv.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.payments[0].txid, txid);
    assert.equal(paid.payments[0].first_seen_at, new Date(Math.floor((start + 2 * 60_000) / 1000) * 1000).toISOString());
  });

  test('after a failed fdatasync a sync still under way writes nothing: the payment is found after the restart', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const tipBefore = f.till.rt.ctx.repos.chainBlocks.tip()!;
    const { result } = await failSyncDuring(f.till, () => call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } }), 'EIO: i/o error, fdatasync');
    assert.equal(result.status, 503);
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(1);
    // The failure stopped the watcher; started again, it stands for a sync that was under way then.
    f.till.rt.chain!.start();
    await f.till.rt.chain!.idle();
    assert.match(String((f.till.rt.health().chain as any).error), /may or may not be saved/);
    await f.till.rt.chain!.stop();
    assert.deepEqual(f.till.rt.ctx.repos.chainBlocks.tip(), tipBefore, 'no block was recorded');
    assert.deepEqual(f.till.rt.ctx.repos.invoices.get(inv.id)!.payments, [], 'no payment was recorded');
    // Restarted, Till finds it on the chain: nothing was lost.
    await f.till.rt.stop();
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    assert.equal(till2.rt.ctx.repos.invoices.get(inv.id)!.status, 'paid');
  });

  onFake('bitcoind restarted mid-stream: Till reports it, reconnects and catches up', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    const node = fakeOnly(f);
    await node.stopRpc();
    await node.stopZmq();
    await f.till.rt.chain!.requestSync(false, 'test');
    const health = f.till.rt.health();
    assert.equal(health.status, 'degraded');
    assert.equal((health.chain as any).status, 'disconnected');
    const res = await fetch(`${f.till.url}/healthz`);
    assert.equal(res.status, 503);
    // Meanwhile the node (as if restarted) mines the payment.
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(1);
    await node.startRpc();
    await node.startZmq({ resetCounters: true });
    await waitFor(async () => (await getInvoice(f, inv.id)).status === 'paid', 'caught up after restart', 15_000);
    await waitFor(() => (f.till.rt.health().chain as any).status === 'synced', 'health back to synced');
    assert.equal(f.till.rt.health().status, 'ok');
  });

  onFake('a pruned node: confirmed payments are found in the UTXO set', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.till.rt.chain!.stop();
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(3);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'paid');
    assert.match(String((till2.rt.health().chain as any).pruned_fallback), /pruned/);
  });

  onFake('a pruned node: an output of 0 sats to an invoice address found in the UTXO set is no payment, and the others are read', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const target = await createInvoice(f);
    const other = await createInvoice(f);
    await f.till.rt.chain!.stop();
    await f.node.mineTx([{ address: target.address, sats: 0 }]);
    await f.node.pay(other.address, 50_000);
    await f.node.mine(3);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    assert.deepEqual(till2.rt.ctx.repos.invoices.get(target.id)!.payments, []);
    assert.equal(till2.rt.ctx.repos.invoices.get(other.id)!.status, 'paid');
    assert.equal(till2.rt.chain!.health().error, null);
  });

  onFake('a pruned node: a coinbase found in the UTXO set is one (immature: not paid before 100 confirmations)', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.till.rt.chain!.stop();
    await f.node.mine(1, { to: inv.address });
    await f.node.mine(3);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual([stored.status, stored.payments[0]!.coinbase, stored.payments[0]!.confirmations], ['pending', true, 4]);
  });

  onFake('a pruned stretch in which an on-time coinbase matures: paid as of the block of its 100th confirmation, not the stretch\'s last', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.till.rt.chain!.stop();
    await f.node.mine(1, { to: inv.address });
    await f.node.mine(98);
    f.till.clock.advance(HOUR);
    const maturedAt = f.till.clock.now();
    await f.node.mine(1);
    f.till.clock.advance(HOUR);
    await f.node.mine(5);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual([stored.status, stored.payments[0]!.confirmations], ['paid', 105]);
    // Block times have whole seconds.
    assert.ok(Math.abs(stored.paidAt! - maturedAt) < 1000, `paid at ${new Date(stored.paidAt!).toISOString()}, matured at ${new Date(maturedAt).toISOString()}`);
  });

  // Dated at expires_at, its late window (an hour here) would have closed before Till was back: a payment now, refused.
  // A block mined an hour after the reorg is within 6 of the old tip, so read in the same change as the reorg.
  for (const blockLater of [false, true]) {
    onFake(`Till down while the block of an on-time coinbase it waited for is reorged away${blockLater ? ', and a block mined an hour later' : ''}: it expires as of the new branch's first block, not at expires_at${blockLater ? ' nor at the last block read with it' : ''}`, async (t) => {
      const f = await startChainFixture(t, makeNode);
      updateStore(f.till.rt.ctx, f.store.storeId, { lateWindowMinutes: 60 });
      const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
      await f.node.mine(1, { to: inv.address });
      await synced(f);
      f.till.clock.advance(2 * HOUR);
      await expireDueInvoices(f.till.rt.ctx);
      assert.equal((await getInvoice(f, inv.id)).status, 'pending', 'it waits for its on-time coinbase to mature');
      await f.till.rt.chain!.stop();
      f.till.clock.advance(HOUR);
      await f.node.reorg(1, {});
      const shownAt = Math.floor(f.till.clock.now() / 1000) * 1000; // the new branch's first block's time (whole seconds)
      f.till.clock.advance(HOUR);
      if (blockLater) {
        await f.node.mine(1);
        f.till.clock.advance(10 * 60_000);
      }
      const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
      await startWatching(till2, f.node);
      await expireDueInvoices(till2.rt.ctx);
      const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual([stored.status, stored.payments[0]!.status], ['expired', 'replaced']);
      assert.ok(Math.abs(stored.expiredAt! - shownAt) < 1000, `expired at ${new Date(stored.expiredAt!).toISOString()}, shown gone at ${new Date(shownAt).toISOString()}`);
    });
  }

  // 10 blocks: more than Till re-evaluates after each block (7); 1,010: more than it keeps counting confirmations for (1,000).
  for (const down of [10, 1010]) {
    onFake(`a pruned node, Till down for ${down} blocks: a payment short of its confirmations when Till stopped pays the invoice on start`, async (t) => {
      const f = await startChainFixture(t, makeNode, { confirmations: 3 });
      const inv = await createInvoice(f);
      await f.node.pay(inv.address, 50_000);
      await mineAndSync(f);
      assert.equal((await getInvoice(f, inv.id)).status, 'pending');
      await f.till.rt.chain!.stop();
      for (let left = down; left > 0; left -= 1000) await f.node.mine(Math.min(left, 1000));
      fakeOnly(f).pruneBelow((await f.node.tip()).height);
      const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
      await startWatching(till2, f.node);
      const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
      assert.equal(stored.payments[0]!.confirmations, down + 1);
      assert.equal(stored.status, 'paid');
    });
  }

  onFake('a pruned stretch of over 1,000 blocks completing an expired invoice whose first payment is over 1,000 blocks deep: late_paid', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    await f.node.pay(inv.address, 20_000);
    await mineAndSync(f);
    f.till.clock.advance(5 * 60_000);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
    // Buried past the depth whose counts are kept current (its count stays at 1,000).
    await f.node.mine(1000);
    await f.till.rt.chain!.requestSync(false, 'test');
    await f.till.rt.chain!.stop();
    // While Till is down, inside the late window: the rest, then 1,000 blocks more, all pruned on the node.
    await f.node.pay(inv.address, 30_000);
    await f.node.mine(1);
    await f.node.mine(1000);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    assert.equal((till2.rt.health().chain as { error: string | null }).error, null);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'late_paid');
    assert.equal(stored.payments.length, 2);
  });

  // Both read the blocks mined while Till was down as one change: each invoice is judged at the block that settled it.
  // Each case: the invoice's expiry, when the payment is mined (then a block more, later), and what Till finds on start.
  const judgedAtItsBlock: Array<[string, { expiresInMinutes: number; paidAfter: number; nextBlockAfter: number }, (stored: StoredInvoice) => void]> = [
    ['Till down to past the late window: a late payment confirmed on day 1 of the window is late_paid', { expiresInMinutes: 5, paidAfter: DAY, nextBlockAfter: 7 * DAY }, (stored) => {
      assert.equal(stored.status, 'late_paid');
      assert.equal(stored.payments.length, 1);
    }],
    ["Till down for two days: an on-time payment's paid_at is its block's time", { expiresInMinutes: 30, paidAfter: 60_000, nextBlockAfter: 2 * DAY }, (stored) => {
      assert.equal(stored.status, 'paid');
      // Found in its block, the payment is dated at the block's time.
      assert.equal(stored.paidAt, stored.payments[0]!.firstSeenAt);
    }],
  ];
  for (const how of ['a pruned node', 'a reorg of the last block Till read'] as const) {
    for (const [name, { expiresInMinutes, paidAfter, nextBlockAfter }, check] of judgedAtItsBlock) {
      onFake(`${how}, ${name}`, async (t) => {
        const f = await startChainFixture(t, makeNode);
        const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: expiresInMinutes });
        await f.till.rt.stop();
        if (how !== 'a pruned node') await f.node.reorg(1, {});
        f.till.clock.advance(paidAfter);
        await f.node.pay(inv.address, 50_000);
        await f.node.mine(1);
        f.till.clock.advance(nextBlockAfter);
        await f.node.mine(1);
        if (how === 'a pruned node') fakeOnly(f).pruneBelow((await f.node.tip()).height);
        const rt2 = await restartAndCatchUp(t, f);
        check(rt2.ctx.repos.invoices.get(inv.id)!);
      });
    }
  }

  onFake('a pruned node, Till down: a late payment makes the invoice late_paid on day 6, a duplicate on day 8 (inside the late_paid window) is recorded for refund', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
    f.till.clock.advance(5 * 60_000);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 1);
    await f.till.rt.stop();
    f.till.clock.advance(6 * DAY);
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(1);
    f.till.clock.advance(2 * DAY);
    const duplicate = await f.node.pay(inv.address, 50_000);
    await f.node.mine(2);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const rt2 = await restartAndCatchUp(t, f);
    const stored = rt2.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'late_paid');
    assert.deepEqual(stored.payments.find((p) => p.txid === duplicate)?.confirmations, 2);
    assert.deepEqual(rt2.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.expired', 'invoice.payment_detected', 'invoice.payment_detected', 'invoice.late_paid']);
  });

  onFake('a reorg while Till was down whose new branch is pruned on the node: the payment mined again stays confirmed, no payment_reversed', async (t) => {
    const f = await startChainFixture(t, makeNode);
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    const minedAt = (await f.node.tip()).height;
    await f.till.rt.chain!.stop();
    await f.node.reorg(1, {});
    await f.node.mine(2);
    fakeOnly(f).pruneBelow((await f.node.tip()).height);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    const tip = await f.node.tip();
    assert.equal(till2.rt.ctx.repos.chainBlocks.tip()!.hash, tip.hash);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.deepEqual(stored.payments.map((p) => [p.status, p.blockHeight, p.confirmations]), [['confirmed', minedAt, tip.height - minedAt + 1]], 'found again in the UTXO set, in the new branch');
    assert.deepEqual(till2.rt.ctx.repos.events.listForInvoice(inv.id).map((e) => e.type), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });
  });
}
