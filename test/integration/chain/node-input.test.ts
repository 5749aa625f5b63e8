import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { address, networks, Transaction } from 'bitcoinjs-lib';
import { Publisher, Subscriber } from 'zeromq';
import { Bitcoind, SCAN_TIMEOUT_MS } from '../../../src/bitcoin/bitcoind.ts';
import { RpcClient, RpcProtocolError, RpcUnavailableError } from '../../../src/bitcoin/rpc-client.ts';
import { ZmqFeed } from '../../../src/bitcoin/zmq-feed.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { tempDir } from '../../helpers/temp.ts';
import { ManualClock } from '../../../src/clock.ts';
import type { ZmqTopic } from '../../fakes/bitcoind/zmq-publisher.ts';
import { databasePath } from '../../../src/db/connection.ts';
import { MIGRATIONS } from '../../../src/db/migrations/index.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { createInvoice, getInvoice, nodeEnv, restartTill, startChainFixture, wrapBitcoind } from './helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeNode } from './nodes.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';

/** A JSON-RPC server on loopback that answers every call with `result` (or `error`), `delayMs` late. */
async function startRpcServer(t: TestContext, result: unknown, delayMs = 0, error: { code: number; message: string } | null = null): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const calls = JSON.parse(body) as Array<{ id: number }>;
      const answers = calls.map((c) => ({ id: c.id, result: error ? null : result, error }));
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answers)), delayMs);
    });
  });
  const url = await listenOnLoopback(server);
  t.after(() => server.close());
  return url;
}

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
        failed: (reason) => seen.push(`failed: ${reason}`),
      },
    });
    t.after(() => feed.stop());
    await feed.start();
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
    assert.ok(!seen.some((s) => s.startsWith('failed')), 'bad messages do not stop the feed');
  });

  test('a feed stopped while it loads zeromq (Till stopping as it starts) opens no socket', async (t) => {
    const opened: Subscriber[] = [];
    const connect = Subscriber.prototype.connect;
    Object.defineProperty(Subscriber.prototype, 'connect', {
      configurable: true,
      value(this: Subscriber, endpoint: string) {
        opened.push(this);
        return connect.call(this, endpoint);
      },
    });
    t.after(() => {
      delete (Subscriber.prototype as { connect?: unknown }).connect;
      for (const sock of opened) sock.close();
    });
    const handlers = { rawtx() {}, hashblock() {}, sequence() {}, resync() {}, malformed() {}, failed() {} };
    const feed = new ZmqFeed({ endpoints: ['tcp://127.0.0.1:9'], handlers });
    const started = feed.start();
    feed.stop();
    await started;
    assert.equal(opened.length, 0, 'a socket left open would keep Till from exiting');
  });

  test('a ZMQ socket that stops reading is replaced: a payment sent after it is seen at once, not at the next block', async (t) => {
    const f = await startChainFixture(t, startFakeNode); // re-syncs on its timer once an hour only
    const first = await createInvoice(f);
    const second = await createInvoice(f);
    // The next read fails (libzmq errors other than a close are rare; this is what one looks like to the feed).
    const receive = Subscriber.prototype.receive;
    let failures = 1;
    // zeromq's receive is read-only on the native Socket: shadowed on Subscriber for this test.
    Object.defineProperty(Subscriber.prototype, 'receive', {
      configurable: true,
      value(this: Subscriber) {
        return failures-- > 0 ? Promise.reject(new Error('test: the socket failed')) : receive.call(this);
      },
    });
    t.after(() => {
      delete (Subscriber.prototype as { receive?: unknown }).receive;
    });
    await f.node.pay(first.address, 50_000);
    await waitFor(async () => (await getInvoice(f, first.id)).payments.length === 1, 'the first payment');
    await waitFor(() => failures <= 0, 'the failed read');
    await waitFor(() => (f.till.rt.health().chain as any).zmq === 'connected', 'a feed connected');
    await f.till.rt.chain!.idle();
    await f.node.waitForSubscriber();
    await f.node.pay(second.address, 50_000);
    await waitFor(async () => (await getInvoice(f, second.id)).payments.length === 1, 'the payment sent after the failure');
  });

  test('a ZMQ socket that fails again at once is replaced after growing pauses, not in a loop of full re-syncs', async (t) => {
    const f = await startChainFixture(t, startFakeNode); // re-syncs on its timer once an hour only
    // Every read fails from the next one on, in every new feed too (a fault of the socket, not of one read).
    let reads = 0;
    Object.defineProperty(Subscriber.prototype, 'receive', {
      configurable: true,
      value() {
        reads++;
        return Promise.reject(new Error('test: the socket fails every read'));
      },
    });
    t.after(() => {
      delete (Subscriber.prototype as { receive?: unknown }).receive;
    });
    const before = f.till.rt.chain!.health().syncs;
    await f.node.mine(1); // the read under way delivers the block; the next one fails
    await waitFor(() => reads > 0, 'the first failed read');
    await new Promise((r) => setTimeout(r, 3_000));
    const syncs = f.till.rt.chain!.health().syncs - before;
    // At once, then after 1 s and 2 s: a handful in 3 s, each a full mempool scan on the node.
    assert.ok(syncs <= 6, `${syncs} re-syncs and ${reads} new feeds in 3 s`);
  });

  test('a feed that read for a minute before failing was sound: the next one starts at once, not after a grown pause', async (t) => {
    const { logger, lines } = capturedLogger();
    const f = await startChainFixture(t, startFakeNode, { logger });
    const pauses = () => lines.filter((l) => l.msg === 'ZMQ feed stopped reading; starting a new one').map((l) => l.retry_in_ms);
    // Reads fail at once in three feeds in a row; the fourth feed's read is held until the test fails it.
    let failing = true;
    let failHeld: ((err: Error) => void) | null = null;
    Object.defineProperty(Subscriber.prototype, 'receive', {
      configurable: true,
      value() {
        if (failing) return Promise.reject(new Error('test: the socket fails every read'));
        return new Promise((_resolve, reject) => (failHeld = reject));
      },
    });
    t.after(() => {
      delete (Subscriber.prototype as { receive?: unknown }).receive;
    });
    await f.node.mine(1); // the read under way delivers the block; the next one fails
    await waitFor(() => pauses().length === 3, 'three failed feeds');
    failing = false;
    assert.deepEqual(pauses(), [0, 1000, 2000]);
    await waitFor(() => failHeld, 'a fourth feed reading', 15_000);
    // Nothing to pass on for a minute (a quiet chain), then the socket fails.
    f.till.clock.advance(61_000);
    failHeld!(new Error('test: the socket failed after a minute'));
    await waitFor(() => pauses().length === 4, 'the fourth feed failed');
    assert.equal(pauses()[3], 0);
  });

  test('a UTXO-set scan is waited for past the timeout of other calls (minutes on mainnet)', async (t) => {
    // Every answer comes 300 ms late; calls time out after 100 ms, but scantxoutset gets SCAN_TIMEOUT_MS.
    const url = await startRpcServer(t, { success: true, txouts: 1, height: 1, bestblock: '00'.repeat(32), unspents: [], total_amount: 0 }, 300);
    const rpc = new RpcClient({ url, credentials: () => ({ user: 'u', password: 'p' }), timeoutMs: 100 });
    assert.ok(SCAN_TIMEOUT_MS >= 15 * 60_000);
    await assert.rejects(rpc.call('getblockcount'), RpcUnavailableError);
    assert.deepEqual(await new Bitcoind(rpc).scanAddresses(['bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080']), []);
  });

  test('a UTXO-set scan given up on is aborted on the node, which would refuse the next scan while it runs', async (t) => {
    // A node that never finishes a scan, and says whether it was told to abort one.
    const asked: unknown[][] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const [c] = JSON.parse(body) as Array<{ id: number; method: string; params: unknown[] }>;
        asked.push([c!.method, ...c!.params.slice(0, 1)]);
        if (c!.params[0] === 'abort') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ id: c!.id, result: true, error: null }]));
      });
    });
    const url = await listenOnLoopback(server);
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const rpc = new RpcClient({ url, credentials: () => ({ user: 'u', password: 'p' }) });
    const scan = new Bitcoind(rpc).scanAddresses(['bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080']);
    await waitFor(() => asked.length === 1, 'the scan reached the node');
    rpc.abortCalls(); // as a stopping watcher does
    await assert.rejects(scan, RpcUnavailableError);
    assert.deepEqual(asked, [['scantxoutset', 'start'], ['scantxoutset', 'abort']]);
  });

  test('a UTXO-set scan says which outputs are coinbases; a node that does not say (Core before 25) is no error, a garbled flag is', async (t) => {
    const unspent = { txid: 'ab'.repeat(32), vout: 0, scriptPubKey: '0014' + '11'.repeat(20), amount: 0.0001, height: 5 };
    const scan = async (flag: Record<string, unknown>) => {
      const answer = { success: true, txouts: 1, height: 6, bestblock: '00'.repeat(32), unspents: [{ ...unspent, ...flag }], total_amount: 0.0001 };
      const rpc = new RpcClient({ url: await startRpcServer(t, answer, 0), credentials: () => ({ user: 'u', password: 'p' }) });
      return new Bitcoind(rpc).scanAddresses(['bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080']);
    };
    assert.deepEqual((await scan({ coinbase: true })).map((u) => [u.sats, u.coinbase]), [[10_000, true]]);
    assert.equal((await scan({ coinbase: false }))[0]!.coinbase, false);
    assert.equal((await scan({}))[0]!.coinbase, false, 'not said: an ordinary output');
    await assert.rejects(scan({ coinbase: 'yes' }), RpcProtocolError);
  });

  test('a node that cannot say what spends an outpoint (Core before 24) is no error; a garbled answer is', async (t) => {
    const outpoint = `${'ab'.repeat(32)}:1`;
    const spenders = async (result: unknown, error: { code: number; message: string } | null = null) => {
      const rpc = new RpcClient({ url: await startRpcServer(t, result, 0, error), credentials: () => ({ user: 'u', password: 'p' }) });
      return new Bitcoind(rpc).mempoolSpenders([outpoint]);
    };
    assert.deepEqual(await spenders(null, { code: -32601, message: 'Method not found' }), new Set());
    assert.deepEqual(await spenders([{ txid: 'ab'.repeat(32), vout: 1, spendingtxid: 'cd'.repeat(32) }]), new Set(['cd'.repeat(32)]));
    assert.deepEqual(await spenders([{ txid: 'ab'.repeat(32), vout: 1 }]), new Set(), 'unspent');
    await assert.rejects(spenders([{ txid: 'ab'.repeat(32), vout: 1, spendingtxid: 'cd' }]), RpcProtocolError);
    await assert.rejects(spenders([]), RpcProtocolError, 'one answer per outpoint');
  });

  test('a rawtx paying an invoice that the node does not hold (a forged ZMQ message) counts for nothing; a real payment after it does', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    const inv = await createInvoice(f);
    const forged = new Transaction();
    forged.addInput(randomBytes(32), 0);
    forged.addOutput(address.toOutputScript(inv.address, networks.regtest), 50_000n);
    f.node.fake!.publishUnheld(forged);
    const real = await f.node.pay(inv.address, 1_000);
    await waitFor(async () => (await getInvoice(f, inv.id)).payments.length > 0, 'the real payment recorded');
    await f.till.rt.chain!.idle();
    const after = await getInvoice(f, inv.id);
    assert.deepEqual([after.status, after.amount_received_sats, after.payments.map((p: any) => p.txid)], ['pending', 1_000, [real]]);
  });

  test('a node whose blocks do not follow each other (every height answered with one old block): an error after a few starts over, retried after pauses, not a busy loop', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    const old = await f.node.tip();
    await f.node.mine(2);
    let asked = 0;
    let broken = true;
    wrapBitcoind(t, 'getBlockHash', (original) => async function (this: Bitcoind, height: number) {
      asked++;
      return broken ? old.hash : original.call(this, height);
    });
    void f.till.rt.chain!.requestSync(false, 'test');
    await waitFor(() => /did not hold together/.test((f.till.rt.health().chain as any).error ?? ''), 'the error in health');
    const before = asked;
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(asked - before <= 6, `calls in the next 500 ms: ${asked - before}`);
    broken = false;
    await waitFor(() => (f.till.rt.health().chain as any).status === 'synced' && f.till.rt.ctx.repos.chainBlocks.tip()?.height === old.height + 2, 'caught up once the node makes sense', 10_000);
  });

  test('a node gone (its ZMQ connection drops): health says disconnected at once, not at the next 30 s sync', async (t) => {
    const f = await startChainFixture(t, startFakeNode); // re-syncs on its timer once an hour only
    assert.equal((f.till.rt.health().chain as any).status, 'synced');
    await f.node.fake!.stopRpc();
    await f.node.fake!.stopZmq();
    await waitFor(() => (f.till.rt.health().chain as any).status === 'disconnected', 'health says the node is gone', 5_000);
  });

  test('restarted while its node does not answer, Till\'s health names the height it had read, not none', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    const { height } = await f.node.tip();
    await f.till.rt.stop();
    await f.node.fake!.stopRpc();
    const rt = restartTill(t, f);
    rt.chain!.start();
    await rt.chain!.idle();
    const health = rt.health().chain as any;
    assert.deepEqual([health.status, health.tip_height], ['disconnected', height]);
  });

  test('only "not in mempool" (-5) says a transaction is not there; any other error fails the call, never a payment gone', async (t) => {
    const txid = 'ab'.repeat(32);
    const ask = async (error: { code: number; message: string }) => {
      const bitcoind = new Bitcoind(new RpcClient({ url: await startRpcServer(t, null, 0, error), credentials: () => ({ user: 'u', password: 'p' }) }));
      return [() => bitcoind.inMempool([txid]), () => bitcoind.getRawTransactions([txid])] as const;
    };
    const [entry, raw] = await ask({ code: -5, message: 'Transaction not in mempool' });
    assert.deepEqual(await entry(), new Map());
    assert.deepEqual(await raw(), []);
    for (const call of await ask({ code: -32603, message: 'Internal error' })) await assert.rejects(call(), /Internal error/);
  });

  test('an RPC answer past the size limit is not read to its end; a plain-text refusal (a full work queue) is quoted', async (t) => {
    const huge = await startRpcServer(t, 'x'.repeat(2 * 1024 * 1024));
    const rpc = new RpcClient({ url: huge, credentials: () => ({ user: 'u', password: 'p' }), maxAnswerBytes: 1024 * 1024 });
    await assert.rejects(rpc.call('getblockchaininfo'), (err: Error) => err instanceof RpcProtocolError && /answer to getblockchaininfo is larger than 1 MiB/.test(err.message));
    const busy = createServer((_req, res) => res.writeHead(503, { 'content-type': 'text/plain' }).end('Work queue depth exceeded'));
    const url = await listenOnLoopback(busy);
    t.after(() => busy.close());
    const refused = new RpcClient({ url, credentials: () => ({ user: 'u', password: 'p' }) });
    await assert.rejects(refused.call('getblockchaininfo'), (err: Error) => err instanceof RpcUnavailableError && /HTTP 503 without JSON: Work queue depth exceeded/.test(err.message));
  });

  test('stopping does not wait for an RPC call under way (a scan may take 30 minutes)', async (t) => {
    // A node that takes every call and answers none.
    let asked = 0;
    const server = createServer(() => asked++);
    const rpcUrl = await listenOnLoopback(server);
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const till = await startTestTill(t, { env: { TILL_BITCOIND: 'true', TILL_RPC_URL: rpcUrl, TILL_RPC_USER: 'u', TILL_RPC_PASSWORD: 'p', TILL_ZMQ: 'tcp://127.0.0.1:1' } });
    till.rt.chain!.start();
    await waitFor(() => asked > 0, 'the first call');
    const stopped = await Promise.race([till.rt.chain!.stop().then(() => 'stopped'), new Promise((r) => setTimeout(r, 5000, 'still waiting for the call after 5 s'))]);
    assert.equal(stopped, 'stopped');
  });

  test('a garbled RPC answer is logged, not a crash; health says what is wrong', async (t) => {
    // Answers every call in the right envelope, but with a getblockchaininfo that makes no sense.
    const rpcUrl = await startRpcServer(t, { chain: 'regtest', blocks: 'many' });
    const till = await startTestTill(t, { env: { TILL_BITCOIND: 'true', TILL_RPC_URL: rpcUrl, TILL_RPC_USER: 'u', TILL_RPC_PASSWORD: 'p', TILL_ZMQ: 'tcp://127.0.0.1:1' } });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    const chain = till.rt.health().chain as any;
    assert.match(chain.error, /getblockchaininfo/);
    assert.equal((await fetch(`${till.url}/healthz`)).status, 503);
    await till.rt.chain!.stop();
  });

  test('a node still at its genesis block (a new regtest or signet node): Till starts there without an error and follows the first block', async (t) => {
    const { startFakeBitcoind } = await import('../../fakes/bitcoind/index.ts');
    const clock = new ManualClock(Date.now());
    const node = await startFakeBitcoind({ clock, initialBlocks: 0 });
    t.after(() => node.stop());
    const till = await startTestTill(t, { clock, env: nodeEnv(node), chainResyncMs: 3_600_000 });
    till.rt.chain!.start();
    t.after(() => till.rt.chain!.stop());
    await till.rt.chain!.idle();
    assert.equal((till.rt.health().chain as any).error, null, JSON.stringify(till.rt.health().chain));
    assert.equal(till.rt.ctx.repos.chainBlocks.tip()?.height, 0);
    await node.waitForSubscriber(['hashblock'], 5000);
    await node.mine(1);
    await waitFor(() => till.rt.ctx.repos.chainBlocks.tip()?.hash === node.tipHash, 'Till at the first block');
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

  test('with the default settings the watcher re-syncs on its 30 s timer, not continuously', { timeout: 15_000 }, async (t) => {
    const { startFakeBitcoind } = await import('../../fakes/bitcoind/index.ts');
    const node = await startFakeBitcoind();
    t.after(() => node.stop());
    const till = await startTestTill(t, { env: nodeEnv(node) });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    await new Promise((r) => setTimeout(r, 500));
    await till.rt.chain!.idle();
    const syncs = (till.rt.health().chain as { syncs: number }).syncs;
    assert.ok(syncs <= 3, `${syncs} re-syncs in half a second`);
  });
});

describe('chain: a node without ZMQ notifications', () => {
  /**
   * A fake node publishing only `zmqTopics`, watched by a till that asks it for
   * its endpoints (no TILL_ZMQ) and syncs every 100 ms; an unconfirmed payment
   * to a new invoice must be found by the poll.
   */
  async function payUnconfirmed(t: TestContext, zmqTopics: ZmqTopic[]) {
    const { startFakeBitcoind } = await import('../../fakes/bitcoind/index.ts');
    const clock = new ManualClock(Date.now());
    const node = await startFakeBitcoind({ clock, zmqTopics });
    t.after(() => node.stop());
    const env = { TILL_BITCOIND: 'true', TILL_RPC_URL: node.rpcUrl, TILL_RPC_COOKIE_FILE: node.cookieFile };
    const till = await startTestTill(t, { clock, env, chainResyncMs: 100 });
    const store = setupStore(till, { mode: 'live' });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    const inv = (await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 50_000 } })).body;
    await node.pay(inv.address, 50_000);
    await waitFor(async () => (await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.amount_received_sats === 50_000, 'the payment found by the poll');
    return { node, till, store };
  }

  /** A second invoice paid and left unmined: found by the poll alone. */
  async function payAnother({ node, till, store }: Awaited<ReturnType<typeof payUnconfirmed>>): Promise<void> {
    const inv = (await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 20_000 } })).body;
    await node.pay(inv.address, 20_000);
    await waitFor(async () => (await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.amount_received_sats === 20_000, 'the second payment found by the poll');
  }

  test('is polled (a payment is found on the timer), and followed by ZMQ once restarted with it', async (t) => {
    const { node, till } = await payUnconfirmed(t, []);
    assert.equal((till.rt.health().chain as any).zmq, 'unavailable');
    // bitcoind restarted with -zmqpubsequence, -zmqpubrawtx, -zmqpubhashblock.
    await node.stopZmq();
    await node.startZmq({ resetCounters: true, topics: ['sequence', 'rawtx', 'hashblock'] });
    await waitFor(() => (till.rt.health().chain as any).zmq === 'connected', 'ZMQ followed without a restart of Till');
    await node.waitForSubscriber(['sequence', 'rawtx', 'hashblock'], 5000);
  });

  test('a feed that loses its node (ZMQ down, the node\'s RPC up): each sync reads the mempool, so a payment is found without a block', async (t) => {
    const paid = await payUnconfirmed(t, ['sequence', 'rawtx', 'hashblock']);
    await paid.node.stopZmq();
    await waitFor(() => (paid.till.rt.health().chain as any).zmq === 'disconnected', 'the feed sees its node gone');
    await payAnother(paid);
  });

  test('a node restarted without ZMQ (getzmqnotifications lists none): Till notices at its next sync and polls the mempool', async (t) => {
    const paid = await payUnconfirmed(t, ['sequence', 'rawtx', 'hashblock']);
    await paid.node.stopZmq({ unlisted: true });
    await waitFor(() => (paid.till.rt.health().chain as any).zmq === 'unavailable', 'ZMQ asked of the node again');
    await payAnother(paid);
  });

  test('with ZMQ for blocks only (no rawtx), the mempool is still polled: an unconfirmed payment is found', async (t) => {
    const { till } = await payUnconfirmed(t, ['hashblock']);
    assert.equal((till.rt.health().chain as any).zmq, 'connected');
  });
});

describe('chain: a data dir from before the chain watcher (schema 2)', () => {
  // 0003_chain gave every existing invoice the "watched while needed" sentinel, whatever its state.
  test('invoices that finished long ago are not watched; a pending one is', async (t) => {
    const { startFakeBitcoind } = await import('../../fakes/bitcoind/index.ts');
    const dir = tempDir(t);
    const raw = new Database(databasePath(dir));
    raw.pragma('journal_mode = WAL');
    for (const m of MIGRATIONS.slice(0, 2)) {
      raw.exec(m.sql);
      raw.pragma(`user_version = ${m.version}`);
    }
    const now = Date.now();
    const yearAgo = now - 365 * 24 * 3600_000;
    const late = 7 * 24 * 3600_000;
    raw.prepare("INSERT INTO stores (id, name, mode, created_at) VALUES ('sto_1', 'Shop', 'test', ?)").run(yearAgo);
    raw.prepare("INSERT INTO xpubs (id, store_id, env, key_text, script_type, key_network, status, created_at) VALUES ('xpb_1', 'sto_1', 'test', 'k', 'p2wpkh', 'test', 'active', ?)").run(yearAgo);
    const insert = raw.prepare(`INSERT INTO invoices (id, store_id, livemode, status, amount_sats, xpub_id, address_index, address, script_hex,
        confirmations_required, late_window_ms, expires_at, created_at, expired_at, cancelled_at)
      VALUES (?, 'sto_1', 0, ?, 1000, 'xpb_1', ?, ?, ?, 1, ?, ?, ?, ?, ?)`);
    insert.run('inv_expired', 'expired', 0, 'addr0', '0014' + '00'.repeat(20), late, yearAgo + 1_800_000, yearAgo, yearAgo + 1_800_000, null);
    insert.run('inv_cancelled', 'cancelled', 1, 'addr1', '0014' + '11'.repeat(20), late, yearAgo + 1_800_000, yearAgo, null, yearAgo + 60_000);
    insert.run('inv_pending', 'pending', 2, 'addr2', '0014' + '22'.repeat(20), late, now + 1_800_000, now, null, null);
    raw.close();

    const clock = new ManualClock(now);
    const node = await startFakeBitcoind({ clock });
    t.after(() => node.stop());
    const till = await startTestTill(t, { clock, env: { ...nodeEnv(node), TILL_DATA_DIR: dir } });
    till.rt.chain!.start();
    await till.rt.chain!.idle();
    assert.equal((till.rt.health().chain as any).watched_addresses, 1);
    assert.deepEqual(till.rt.ctx.db.prepare('SELECT id, watch_until FROM invoices ORDER BY id').all(), [
      { id: 'inv_cancelled', watch_until: yearAgo + 60_000 + late },
      { id: 'inv_expired', watch_until: yearAgo + 1_800_000 + late },
      { id: 'inv_pending', watch_until: Number.MAX_SAFE_INTEGER },
    ]);
  });
});
