import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { Publisher } from 'zeromq';
import { loadConfig } from '../../../src/config.ts';
import { silentLogger } from '../../../src/log.ts';
import { createRuntime } from '../../../src/runtime.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { ZmqFeed } from '../../../src/bitcoin/zmq-feed.ts';
import { createInvoice, eventTypes, getInvoice, mineAndSync, nodeEnv, startChainFixture, startWatching, waitFor } from './helpers.ts';
import { startTestTill } from '../../helpers/till-server.ts';

describe('chain: replaced, reorged and missed payments', () => {
  test('RBF before confirmation: the replaced payment stops counting; the replacement, if it pays, counts', async (t) => {
    const f = await startChainFixture(t);
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

  test('a reorg un-confirms a payment and a later block re-confirms it', async (t) => {
    const f = await startChainFixture(t, { confirmations: 2 });
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).payments[0].confirmations, 1);
    await f.node.reorg(1, { leaveInMempool: [txid] });
    await waitFor(() => f.till.rt.ctx.repos.chainBlocks.tip()?.hash === f.node.tipHash, 'reorg processed');
    await f.till.rt.chain!.idle();
    const back = await getInvoice(f, inv.id);
    assert.equal(back.payments[0].status, 'mempool');
    assert.equal(back.status, 'pending');
    await mineAndSync(f, 2);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
  });

  test('a reorg that drops a payment after paid: the invoice stays paid and payment_reversed is sent once', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    const txid = await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    assert.equal((await getInvoice(f, inv.id)).status, 'paid');
    await f.node.reorg(1, { dropTxids: [txid] });
    await waitFor(() => f.till.rt.ctx.repos.chainBlocks.tip()?.hash === f.node.tipHash, 'reorg processed');
    await f.till.rt.chain!.requestSync(true, 'test');
    const after = await getInvoice(f, inv.id);
    assert.equal(after.status, 'paid', 'a paid invoice stays paid');
    assert.equal(after.payments[0].status, 'replaced');
    assert.equal(after.amount_confirmed_sats, 0);
    await mineAndSync(f, 2);
    const types = eventTypes(f, inv.id);
    assert.equal(types.filter((x) => x === 'invoice.payment_reversed').length, 1, types.join(','));
  });

  test('every second ZMQ rawtx dropped: every payment is still found', async (t) => {
    const f = await startChainFixture(t);
    let n = 0;
    f.node.dropZmq((m) => m.topic === 'rawtx' && n++ % 2 === 1);
    const invoices = [];
    for (let i = 0; i < 6; i++) invoices.push(await createInvoice(f));
    for (const inv of invoices) await f.node.pay(inv.address, 50_000);
    await mineAndSync(f);
    await f.till.rt.chain!.idle();
    for (const inv of invoices) assert.equal((await getInvoice(f, inv.id)).status, 'paid', inv.id);
  });

  test('Till down while 20 blocks with payments are mined: all found on start', async (t) => {
    const f = await startChainFixture(t);
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
    const rt2 = createRuntime(loadConfig({ env: { TILL_DATA_DIR: f.till.config.dataDir, TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', ...nodeEnv(f.node) } }), { clock: f.till.clock, logger: silentLogger });
    t.after(() => rt2.stop());
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

  test('bitcoind restarted mid-stream: Till reports it, reconnects and catches up', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    await f.node.stopRpc();
    await f.node.stopZmq();
    await f.till.rt.chain!.requestSync(false, 'test');
    const health = f.till.rt.health();
    assert.equal(health.status, 'degraded');
    assert.equal((health.chain as any).status, 'disconnected');
    const res = await fetch(`${f.till.url}/healthz`);
    assert.equal(res.status, 503);
    // Meanwhile the node (as if restarted) mines the payment.
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(1);
    await f.node.startRpc();
    await f.node.startZmq({ resetCounters: true });
    await waitFor(async () => (await getInvoice(f, inv.id)).status === 'paid', 'caught up after restart', 15_000);
    await waitFor(() => (f.till.rt.health().chain as any).status === 'synced', 'health back to synced');
    assert.equal(f.till.rt.health().status, 'ok');
  });

  test('a pruned node: confirmed payments are found in the UTXO set', async (t) => {
    const f = await startChainFixture(t);
    const inv = await createInvoice(f);
    await f.till.rt.chain!.stop();
    await f.node.pay(inv.address, 50_000);
    await f.node.mine(3);
    f.node.pruneBelow(f.node.tipHeight);
    const till2 = await startTestTill(t, { clock: f.till.clock, env: { TILL_DATA_DIR: f.till.config.dataDir, ...nodeEnv(f.node) } });
    await startWatching(till2, f.node);
    const stored = till2.rt.ctx.repos.invoices.get(inv.id)!;
    assert.equal(stored.status, 'paid');
    assert.match(String((till2.rt.health().chain as any).pruned_fallback), /pruned/);
  });
});

describe('chain: bad input from the node', () => {
  test('malformed ZMQ messages are reported and ignored; the feed keeps going', async (t) => {
    const pub = new Publisher();
    await pub.bind('tcp://127.0.0.1:*');
    t.after(() => pub.close());
    const seen: string[] = [];
    const feed = new ZmqFeed({
      endpoints: [pub.lastEndpoint!],
      handlers: {
        rawtx: () => seen.push('rawtx'),
        hashblock: (h) => seen.push(`hashblock ${h.slice(0, 4)}`),
        sequence: () => seen.push('sequence'),
        resync: (reason) => seen.push(`resync: ${reason}`),
        malformed: (topic, reason) => seen.push(`malformed ${topic}: ${reason}`),
      },
    });
    feed.start();
    t.after(() => feed.stop());
    const seq = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; };
    await waitFor(async () => {
      await pub.send(['hashblock', Buffer.alloc(32, 0xab), seq(0)]);
      return seen.some((s) => s.startsWith('hashblock'));
    }, 'subscriber joined');
    const before = seen.length;
    await pub.send(['hashblock', Buffer.alloc(7), seq(1)]);
    await pub.send(['sequence', Buffer.alloc(33, 0x41), seq(2)]);
    await pub.send(['rawtx', Buffer.from('zz')]);
    await pub.send(['hashblock', Buffer.alloc(32, 0xcd), seq(9)]);
    await waitFor(() => seen.some((s) => s === 'hashblock cdcd'), 'the feed still works');
    const after = seen.slice(before);
    assert.ok(after.some((s) => /malformed hashblock: hash is not 32 bytes/.test(s)), after.join('\n'));
    assert.ok(after.some((s) => /malformed rawtx: expected 3 frames/.test(s)));
    assert.ok(after.some((s) => /resync: hashblock sequence gap/.test(s)));
  });

  test('a garbled RPC answer is logged, not a crash; health says what is wrong', async (t) => {
    // Answers every call in the right envelope, but with a getblockchaininfo that makes no sense.
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const calls = JSON.parse(body) as Array<{ id: number }>;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(calls.map((c) => ({ id: c.id, result: { chain: 'regtest', blocks: 'many' }, error: null }))));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(() => server.close());
    const port = (server.address() as { port: number }).port;
    const till = await startTestTill(t, { env: { TILL_BITCOIND: 'true', TILL_RPC_URL: `http://127.0.0.1:${port}`, TILL_RPC_USER: 'u', TILL_RPC_PASSWORD: 'p', TILL_ZMQ: 'tcp://127.0.0.1:1' } });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    const chain = till.rt.health().chain as any;
    assert.match(chain.error, /getblockchaininfo/);
    assert.equal((await fetch(`${till.url}/healthz`)).status, 503);
    await till.rt.chain!.stop();
  });

  test('a node on another network is a fatal error, not wrong addresses', async (t) => {
    const { startFakeBitcoind } = await import('../../fakes/bitcoind/index.ts');
    const node = await startFakeBitcoind();
    t.after(() => node.stop());
    let fatal = '';
    const till = await startTestTill(t, { env: { ...nodeEnv(node), TILL_NETWORK: 'main' }, onFatal: (m) => (fatal = m) });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    assert.match(fatal, /bitcoind is on chain "regtest" but Till is configured for network "main"/);
    assert.equal((till.rt.health().chain as any).status, 'fatal');
  });
});
