import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Bitcoind } from '../../../src/bitcoin/bitcoind.ts';
import { RpcUnavailableError } from '../../../src/bitcoin/rpc-client.ts';
import { ManualClock } from '../../../src/clock.ts';
import type { Runtime } from '../../../src/runtime.ts';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { updateStore } from '../../../src/services/stores.ts';
import { createInvoice, eventTypes, getInvoice, mineAndSync, restartAndCatchUp, restartTill, startChainFixture, synced, wrapBitcoind } from './helpers.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeNode } from './nodes.ts';

// Syncs that fail or are cut short, on the fake node (whose RPC the tests
// interrupt at a chosen call by wrapping Bitcoind's methods): Till must not
// judge invoices on a chain it has not finished reading.

const MIN = 60_000;

describe('chain syncs that do not finish (fake node)', () => {
  test('bitcoind unreachable across expiry: live invoices wait, and a payment mined on time pays', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    const node = f.node.fake!;
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    await node.stopRpc();
    await node.stopZmq();
    await f.till.rt.chain!.requestSync(false, 'test');
    // The buyer pays at minute 5, mined at minute 10, while Till cannot reach the node.
    f.till.clock.advance(5 * MIN);
    await f.node.pay(inv.address, 50_000);
    f.till.clock.advance(5 * MIN);
    await f.node.mine(1);
    f.till.clock.advance(6 * MIN);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0, 'nothing expires on a chain Till cannot read');
    await node.startRpc();
    await node.startZmq();
    await f.till.rt.chain!.requestSync(true, 'test');
    await f.till.rt.chain!.idle();
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'paid');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('a block that leaves the chain as the sync reads it (the node says a height it then lacks): no error, the re-sync reaches the tip', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startChainFixture(t, startFakeNode, { logger });
    const inv = await createInvoice(f);
    await f.node.pay(inv.address, 50_000);
    let once = true;
    // The node answers getblockchaininfo with one block more than it then has (invalidateblock between the calls).
    wrapBitcoind(t, 'getChainInfo', (original) => async function (this: Bitcoind) {
      const info = await original.call(this);
      if (!once) return info;
      once = false;
      return { ...info, blocks: info.blocks + 1 };
    });
    await f.node.mine(1);
    await synced(f);
    assert.equal(once, false, 'the sync was told of a block the node did not have');
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    assert.equal((f.till.rt.health().chain as any).error, null);
    assert.deepEqual(lines.filter((l) => l.level >= 40).map((l) => l.msg), [], 'nothing logged as a warning or error');
  });

  test('a node that keeps naming a height it lacks is an error after one quiet start-over, retried with the backoff (no loop)', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startChainFixture(t, startFakeNode, { logger });
    let lying = true;
    let asked = 0;
    wrapBitcoind(t, 'getChainInfo', (original) => async function (this: Bitcoind) {
      const info = await original.call(this);
      asked++;
      return lying ? { ...info, blocks: info.blocks + 1 } : info;
    });
    void f.till.rt.chain!.requestSync(false, 'test');
    await waitFor(() => lines.some((l) => l.msg === 'chain sync failed; retrying'), 'the error');
    assert.equal(asked, 2, 'one quiet start-over, then the error');
    lying = false;
    await f.node.mine(1);
    await synced(f);
  });

  test('a block mining a reorged payment that arrives while Till asks the mempool about it: still a payment, never "replaced"', async (t) => {
    const f = await startChainFixture(t, startFakeNode, { confirmations: 2 });
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f); // 1 of 2 confirmations
    // Past its expiry the invoice waits for its on-time payment's second confirmation.
    f.till.clock.advance(16 * MIN);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0);
    let armed = true;
    wrapBitcoind(t, 'inMempool', (original) => async function (this: Bitcoind, txids: string[]) {
      if (armed && txids.includes(txid)) {
        armed = false;
        await f.node.mine(1); // the reorged payment leaves the mempool for the next block before the answer
      }
      return original.call(this, txids);
    });
    await f.node.reorg(1, { leaveInMempool: [txid] });
    await waitFor(() => !armed, 'the mempool asked as the block came in');
    await synced(f);
    await mineAndSync(f);
    const after = await getInvoice(f, inv.id);
    assert.deepEqual([after.status, after.payments.map((p: any) => p.status)], ['paid', ['confirmed']]);
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('a block mined between the catch-up and the mempool check: its payment is confirmed, not replaced', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    await f.node.pay(inv.address, 50_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length === 1, 'the mempool payment');
    // Past expiry the invoice waits for its on-time payment's block.
    f.till.clock.advance(16 * MIN);
    assert.equal(await expireDueInvoices(f.till.rt.ctx), 0);
    let once = true;
    wrapBitcoind(t, 'inMempool', (original) => async function (this: Bitcoind, txids: string[]) {
      if (once) {
        once = false;
        await f.node.mine(1);
      }
      return original.call(this, txids);
    });
    await f.till.rt.chain!.requestSync(false, 'timer');
    await f.till.rt.chain!.idle();
    const after = await getInvoice(f, inv.id);
    assert.equal(after.payments[0].status, 'confirmed');
    assert.equal(after.status, 'paid');
    assert.deepEqual(eventTypes(f, inv.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
  });

  test('a restart catch-up cut short by a reorg is not a catch-up: nothing expires before the new branch is read', async (t) => {
    const nodeClock = new ManualClock(Date.now());
    const f = await startChainFixture(t, () => startFakeNode(nodeClock));
    const T = f.till.clock.now();
    nodeClock.set(T);
    const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 15 });
    await f.till.rt.stop();
    const H = (await f.node.tip()).height;
    // While Till is down the buyer pays at minute 5: mined in H+2, then H+3.
    nodeClock.set(T + 5 * MIN);
    await f.node.mine(1);
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(2);
    f.till.clock.set(T + 20 * MIN);
    let reorged = false;
    wrapBitcoind(t, 'getBlockHash', (original) => async function (this: Bitcoind, height: number) {
      if (!reorged && height === H + 2) {
        reorged = true;
        // A competing branch (the payment again at H+2') arrives mid-sync, its rawtx messages lost.
        nodeClock.set(T + 6 * MIN);
        f.node.fake!.dropZmq((m) => m.topic === 'rawtx');
        await f.node.reorg(3, {});
        f.node.fake!.dropZmq(null);
      }
      return original.call(this, height);
    });
    let rt2: Runtime | null = null;
    let infoCalls = 0;
    const expiredMidway: number[] = [];
    wrapBitcoind(t, 'getChainInfo', (original) => async function (this: Bitcoind) {
      // The 1 s expiry loop fires while the second sync waits for bitcoind.
      if (++infoCalls === 2) expiredMidway.push(await expireDueInvoices(rt2!.ctx));
      return original.call(this);
    });
    rt2 = restartTill(t, f);
    rt2.chain!.start();
    await rt2.chain!.idle();
    assert.deepEqual(expiredMidway, [0], 'the re-sync after the cut ran, and nothing expired before it');
    assert.equal(rt2.ctx.repos.invoices.get(inv.id)!.status, 'paid');
  });

  // Blocks mined while Till is down (new money may join until T+15): H+1, then H+2 with a late payment at T+10.
  // A block's time need only exceed the median of the 11 before it: H+1 may be stamped after H+2.
  for (const { firstAt, why } of [
    { firstAt: 7, why: '' },
    { firstAt: 25, why: ' (the block read stamped later than the next, by a miner whose clock is ahead)' },
  ]) {
    test(`Till restarted during its catch-up${why}: a late payment mined inside the late window while it was down is still found`, async (t) => {
      const nodeClock = new ManualClock(Date.now());
      const f = await startChainFixture(t, () => startFakeNode(nodeClock));
      const T = f.till.clock.now();
      nodeClock.set(T);
      updateStore(f.till.rt.ctx, f.store.storeId, { lateWindowMinutes: 10 });
      const inv = await createInvoice(f, { amount_sats: 50_000, expires_in_minutes: 5 });
      f.till.clock.set(T + 6 * MIN);
      await expireDueInvoices(f.till.rt.ctx);
      const H = (await f.node.tip()).height;
      await f.till.rt.stop();
      nodeClock.set(T + firstAt * MIN);
      await f.node.mine(1);
      nodeClock.set(T + 10 * MIN);
      const txid = await f.node.pay(inv.address, 50_000);
      await f.node.mine(1);
      // Till comes back after the window; its catch-up reads H+1 and is stopped before H+2.
      f.till.clock.set(T + 40 * MIN);
      let cut = true;
      wrapBitcoind(t, 'getBlockHash', (original) => async function (this: Bitcoind, height: number) {
        if (cut && height === H + 2) throw new RpcUnavailableError('the test cut the catch-up here');
        return original.call(this, height);
      });
      const rt1 = restartTill(t, f);
      rt1.chain!.start();
      await waitFor(() => rt1.ctx.repos.chainBlocks.tip()?.height === H + 1, 'the catch-up to read H+1');
      await rt1.stop();
      cut = false;
      f.till.clock.advance(MIN);
      const rt2 = await restartAndCatchUp(t, f);
      const after = rt2.ctx.repos.invoices.get(inv.id)!;
      assert.deepEqual(after.payments.map((p) => [p.txid, p.status]), [[txid, 'confirmed']]);
      assert.equal(after.status, 'late_paid');
    });
  }

  test('a full re-sync asked for during a sync that meets a reorg stays full: a mempool payment whose rawtx was lost is found', async (t) => {
    const f = await startChainFixture(t, startFakeNode, { confirmations: 0 });
    const fake = f.node.fake!;
    const inv = await createInvoice(f);
    const H = fake.tipHeight;
    let armed = true;
    wrapBitcoind(t, 'getBlockHash', (original) => async function (this: Bitcoind, height: number) {
      if (armed && height === H + 2) {
        armed = false;
        // The buyer's payment: its rawtx is lost on the way.
        fake.dropZmq((m) => m.topic === 'rawtx');
        await f.node.pay(inv.address, 50_000);
        fake.dropZmq(null);
        // The next rawtx shows the gap: Till asks for a full re-sync, queued behind this one.
        await f.node.pay(fake.walletAddress, 10_000);
        await new Promise((r) => setTimeout(r, 300));
        // And the chain moves under the running sync.
        await f.node.reorg(2, {});
      }
      return original.call(this, height);
    });
    await f.node.mine(2);
    await waitFor(() => !armed, 'the sync to reach the block');
    await f.till.rt.chain!.idle();
    const after = await getInvoice(f, inv.id);
    assert.equal(after.payments.length, 1, 'the full re-sync scanned the mempool');
    assert.equal(after.status, 'paid', '0 confirmations required');
  });
  test('a payment recorded while the mempool check waits for its answer is not marked replaced: it was not asked about', async (t) => {
    let hold = false;
    let reached!: () => void;
    const arrived = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    wrapBitcoind(t, 'inMempool', (original) => async function (this: Bitcoind, txids: string[]) {
      const answer = await original.call(this, txids);
      if (hold) {
        hold = false;
        reached();
        await released;
      }
      return answer;
    });
    const f = await startChainFixture(t, startFakeNode);
    const a = await createInvoice(f);
    const b = await createInvoice(f);
    const txA = await f.node.pay(a.address, 50_000, { rbf: true });
    await waitFor(async () => (await getInvoice(f, a.id)).payments.length === 1, 'a in the mempool');
    // a's buyer double-spends back to their wallet: Core's `R` starts a re-sync, whose mempool check is held here.
    hold = true;
    await f.node.replace(txA, { outputs: [] });
    await arrived;
    // Meanwhile b is paid, and Till records it from its rawtx.
    const txB = await f.node.pay(b.address, 50_000);
    await waitFor(async () => (await getInvoice(f, b.id)).payments.length === 1, 'b in the mempool');
    release();
    await f.till.rt.chain!.idle();
    assert.equal((await getInvoice(f, a.id)).payments[0].status, 'replaced', 'a was double-spent');
    const ib = await getInvoice(f, b.id);
    assert.deepEqual(ib.payments.map((p: any) => [p.txid, p.status]), [[txB, 'mempool']]);
    assert.deepEqual(eventTypes(f, b.id), ['invoice.created', 'invoice.payment_detected']);
  });
});
