// The fake bitcoind seen from outside, as Till's chain watcher will see it:
// a zeromq Subscriber and plain fetch() JSON-RPC calls over loopback.
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import * as bitcoin from 'bitcoinjs-lib';
import * as zmq from 'zeromq';
import { ManualClock } from '../../src/clock.ts';
import { descriptorChecksum } from '../fakes/bitcoind/descriptor.ts';
import { GENESIS_HASH, startFakeBitcoind, type FakeBitcoind, type FakeBitcoindOptions, type ZmqTopic } from '../fakes/bitcoind/index.ts';

const REGTEST = bitcoin.networks.regtest;
// Addresses of every type a customer may pay from (keys are BIP340/secp256k1 test points).
const G = Buffer.from('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex');
const ADDRESSES = {
  p2wpkh: bitcoin.payments.p2wpkh({ pubkey: G, network: REGTEST }).address!,
  p2tr: bitcoin.payments.p2tr({ internalPubkey: G.subarray(1), network: REGTEST }).address!,
  p2sh: bitcoin.payments.p2sh({ redeem: bitcoin.payments.p2wpkh({ pubkey: G, network: REGTEST }), network: REGTEST }).address!,
  p2pkh: bitcoin.payments.p2pkh({ pubkey: G, network: REGTEST }).address!,
};
const WAIT_MS = 3000;

async function startNode(t: TestContext, opts: FakeBitcoindOptions = {}): Promise<FakeBitcoind> {
  const node = await startFakeBitcoind({ clock: new ManualClock('2026-11-21T10:00:00.000Z'), ...opts });
  t.after(() => node.stop());
  return node;
}

function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

async function post(node: FakeBitcoind, body: string, authorization = basicAuth(node.rpcUser, node.rpcPassword)): Promise<Response> {
  return fetch(node.rpcUrl, { method: 'POST', headers: { authorization }, body, signal: AbortSignal.timeout(WAIT_MS) });
}

/** One JSON-RPC 1.0 call; resolves to the HTTP status, the raw text and the parsed reply. */
async function call(node: FakeBitcoind, method: string, params: unknown[] | Record<string, unknown> = []) {
  const res = await post(node, JSON.stringify({ jsonrpc: '1.0', id: 'test', method, params }));
  const text = await res.text();
  return { status: res.status, text, reply: JSON.parse(text) as { result: any; error: { code: number; message: string } | null; id: unknown } };
}

async function result(node: FakeBitcoind, method: string, params: unknown[] = []): Promise<any> {
  const { status, reply } = await call(node, method, params);
  assert.equal(status, 200, `${method}: ${JSON.stringify(reply.error)}`);
  return reply.result;
}

interface Note {
  topic: string;
  body: Buffer;
  seq: number;
}

/** A zeromq SUB socket recording everything it receives. */
class Tap {
  readonly notes: Note[] = [];
  readonly #socket = new zmq.Subscriber({ linger: 0 });
  #changed: () => void = () => undefined;

  static async open(t: TestContext, node: FakeBitcoind, topics: ZmqTopic[] = ['hashblock', 'hashtx', 'rawblock', 'rawtx', 'sequence']): Promise<Tap> {
    const tap = new Tap();
    tap.#socket.connect(node.zmqEndpoint);
    for (const topic of topics) tap.#socket.subscribe(topic);
    void tap.#read();
    t.after(() => tap.#socket.close());
    await node.waitForSubscriber(topics, WAIT_MS);
    return tap;
  }

  async #read(): Promise<void> {
    try {
      for await (const [topic, body, seq] of this.#socket) {
        this.notes.push({ topic: topic!.toString(), body: body!, seq: seq!.readUInt32LE(0) });
        this.#changed();
      }
    } catch {
      // closed
    }
  }

  of(topic: string): Note[] {
    return this.notes.filter((n) => n.topic === topic);
  }

  /** Waits until `count` notes of `topic` have arrived in total. */
  async waitFor(topic: string, count: number): Promise<Note[]> {
    const deadline = Date.now() + WAIT_MS;
    while (this.of(topic).length < count) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} ${topic} notes, have ${this.of(topic).length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.#changed = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.of(topic);
  }
}

/** A `sequence` body: hash, label, and for A/R the mempool sequence. */
function parseSequence(body: Buffer): { hash: string; label: string; mempoolSeq?: bigint } {
  const parsed: { hash: string; label: string; mempoolSeq?: bigint } = {
    hash: body.subarray(0, 32).toString('hex'),
    label: String.fromCharCode(body[32]!),
  };
  if (body.length === 41) parsed.mempoolSeq = body.readBigUInt64LE(33);
  return parsed;
}

function sequenceEvents(tap: Tap): string[] {
  return tap.of('sequence').map((n) => {
    const s = parseSequence(n.body);
    return `${s.label}:${s.hash}`;
  });
}

describe('fake bitcoind chain', () => {
  test('starts on the real regtest genesis with linked, valid blocks', async (t) => {
    const node = await startNode(t, { initialBlocks: 20 });
    assert.equal(await result(node, 'getblockhash', [0]), GENESIS_HASH);
    assert.equal(node.tipHeight, 20);
    assert.equal(await result(node, 'getblockcount'), 20);
    assert.equal(await result(node, 'getbestblockhash'), node.tipHash);

    for (const height of [1, 16, 17, 20]) {
      const hash = await result(node, 'getblockhash', [height]);
      const block = bitcoin.Block.fromHex(await result(node, 'getblock', [hash, 0]));
      assert.equal(block.getId(), hash);
      assert.ok(block.checkTxRoots(), 'merkle root and witness commitment verify');
      assert.ok(block.checkProofOfWork(), 'header meets the regtest target');
      assert.equal(block.bits, 0x207fffff);
      assert.equal(Buffer.from(block.prevHash!).reverse().toString('hex'), await result(node, 'getblockhash', [height - 1]));
      // BIP34: the coinbase scriptSig starts with the height.
      const [first] = bitcoin.script.decompile(block.transactions![0]!.ins[0]!.script)!;
      const encoded = typeof first === 'number' ? first - bitcoin.opcodes.OP_1 + 1 : bitcoin.script.number.decode(Buffer.from(first!));
      assert.equal(encoded, height);
    }

    const header = await result(node, 'getblockheader', [node.tipHash]);
    assert.equal(header.height, 20);
    assert.equal(header.confirmations, 1);
    assert.equal(header.bits, '207fffff');
    assert.equal(header.chainwork, (21 * 2).toString(16).padStart(64, '0'));
    assert.equal(header.previousblockhash, await result(node, 'getblockhash', [19]));
    assert.equal(await result(node, 'getblockheader', [node.tipHash, false]), bitcoin.Block.fromHex(await result(node, 'getblock', [node.tipHash, 0])).toHex(true));
  });

  test('pay publishes hashtx, rawtx and sequence A, each topic counting up', async (t) => {
    const node = await startNode(t);
    const tap = await Tap.open(t, node);
    const first = await node.pay(ADDRESSES.p2wpkh, 10_000);
    const second = await node.payMany([
      { address: ADDRESSES.p2tr, sats: 20_000 },
      { address: ADDRESSES.p2sh, sats: 30_000 },
      { address: ADDRESSES.p2pkh, sats: 40_000n },
    ]);

    const raw = await tap.waitFor('rawtx', 2);
    const txs = raw.map((n) => bitcoin.Transaction.fromBuffer(n.body));
    assert.deepEqual(txs.map((tx) => tx.getId()), [first, second]);
    assert.deepEqual(raw.map((n) => n.seq), [0, 1]);
    assert.deepEqual((await tap.waitFor('hashtx', 2)).map((n) => n.body.toString('hex')), [first, second]);
    const seqs = (await tap.waitFor('sequence', 2)).map((n) => ({ zmq: n.seq, ...parseSequence(n.body) }));
    assert.deepEqual(seqs.map((s) => [s.hash, s.label, s.zmq]), [[first, 'A', 0], [second, 'A', 1]]);
    assert.equal(seqs[1]!.mempoolSeq, seqs[0]!.mempoolSeq! + 1n);

    // Outputs pay what was asked, in order, with change last.
    assert.equal(txs[0]!.outs[0]!.value, 10_000n);
    assert.deepEqual(txs[1]!.outs.slice(0, 3).map((o) => bitcoin.address.fromOutputScript(o.script, REGTEST)), [ADDRESSES.p2tr, ADDRESSES.p2sh, ADDRESSES.p2pkh]);
    assert.deepEqual(await result(node, 'getrawmempool'), [first, second]);
    const entry = await result(node, 'getmempoolentry', [first]);
    assert.equal(entry.ancestorcount, 1);
    assert.equal(entry.vsize, txs[0]!.virtualSize());
    assert.match((await call(node, 'getmempoolentry', [first])).text, /"base":0\.00000\d{3},/);
    const mempool = await result(node, 'getrawmempool', [false, true]);
    assert.equal(mempool.mempool_sequence, Number(seqs[1]!.mempoolSeq!) + 1);
  });

  test('mine confirms mempool transactions and republishes them with the coinbase', async (t) => {
    const node = await startNode(t);
    const tap = await Tap.open(t, node);
    const txid = await node.pay(ADDRESSES.p2wpkh, 12_345);
    const [hash] = await node.mine(1);

    const hashblock = await tap.waitFor('hashblock', 1);
    assert.equal(hashblock[0]!.body.toString('hex'), hash);
    const rawblock = await tap.waitFor('rawblock', 1);
    const block = bitcoin.Block.fromBuffer(rawblock[0]!.body);
    assert.equal(block.getId(), hash);
    assert.ok(block.checkTxRoots());
    assert.equal(Buffer.from(block.merkleRoot!).toString('hex'), Buffer.from(bitcoin.Block.calculateMerkleRoot(block.transactions!)).toString('hex'));
    const ids = block.transactions!.map((tx) => tx.getId());
    assert.ok(ids.includes(txid));

    // rawtx: the mempool entry, then each transaction of the block, coinbase first.
    const raw = await tap.waitFor('rawtx', 3);
    assert.deepEqual(raw.map((n) => bitcoin.Transaction.fromBuffer(n.body).getId()), [txid, ids[0], txid]);
    assert.ok(bitcoin.Transaction.fromBuffer(raw[1]!.body).isCoinbase());
    assert.deepEqual(raw.map((n) => n.seq), [0, 1, 2]);
    await tap.waitFor('sequence', 2);
    assert.deepEqual(sequenceEvents(tap), [`A:${txid}`, `C:${hash}`]);

    assert.deepEqual(await result(node, 'getrawmempool'), []);
    const verbose = await result(node, 'getrawtransaction', [txid, 2, hash]);
    assert.equal(verbose.in_active_chain, true);
    assert.equal(verbose.confirmations, 1);
    assert.equal(verbose.blockhash, hash);
    assert.ok(verbose.fee > 0 && verbose.vin[0].prevout.value > 0);
    const details = await result(node, 'getblock', [hash, 2]);
    assert.equal(details.tx[1].txid, txid);
  });

  test('reorg publishes D then C in Core order, moves heights and drops double-spent payments', async (t) => {
    const node = await startNode(t);
    const kept = await node.pay(ADDRESSES.p2wpkh, 50_000);
    await node.mine(1);
    const dropped = await node.pay(ADDRESSES.p2tr, 60_000);
    const unconfirmed = await node.pay(ADDRESSES.p2sh, 70_000);
    await node.mine(1);
    const tip = node.tipHeight;
    const oldHashes = [await result(node, 'getblockhash', [tip - 1]), node.tipHash];
    const tap = await Tap.open(t, node);

    const { disconnected, connected } = await node.reorg(2, { dropTxids: [dropped], leaveInMempool: [unconfirmed] });
    assert.deepEqual(disconnected, [oldHashes[1], oldHashes[0]]);
    assert.equal(connected.length, 3);
    assert.equal(node.tipHeight, tip + 1);
    assert.equal(await result(node, 'getblockhash', [tip - 1]), connected[0]);
    assert.equal(await result(node, 'getblockhash', [tip]), connected[1]);
    assert.notEqual(connected[0], oldHashes[0]);

    await tap.waitFor('sequence', 6);
    assert.deepEqual(sequenceEvents(tap), [
      `D:${oldHashes[1]}`,
      `D:${oldHashes[0]}`,
      `A:${unconfirmed}`,
      ...connected.map((h) => `C:${h}`),
    ]);
    // As Core, every transaction of a disconnected block is published again on rawtx (old tip first).
    const rawIds = (await tap.waitFor('rawtx', 3)).map((n) => bitcoin.Transaction.fromBuffer(n.body).getId());
    const oldTip = await result(node, 'getblock', [oldHashes[1], 1]);
    assert.deepEqual(rawIds.slice(0, 3), oldTip.tx);
    // Block notifications only for the new tip.
    assert.deepEqual((await tap.waitFor('hashblock', 1)).map((n) => n.body.toString('hex')), [node.tipHash]);

    const oldHeader = await result(node, 'getblockheader', [oldHashes[1]]);
    assert.equal(oldHeader.confirmations, -1, 'the old tip is stale');
    assert.equal(oldHeader.nextblockhash, undefined);
    const keptTx = await result(node, 'getrawtransaction', [kept, 1, connected[0]]);
    assert.equal(keptTx.confirmations, 3, 'confirmed again at the same height');
    assert.deepEqual(await result(node, 'getrawmempool'), [unconfirmed]);
    const stale = await result(node, 'getrawtransaction', [dropped, 1, oldHashes[1]]);
    assert.equal(stale.in_active_chain, false);
    assert.equal(stale.confirmations, 0);
    const scan = await result(node, 'scantxoutset', ['start', [`addr(${ADDRESSES.p2tr})`]]);
    assert.deepEqual(scan.unspents, [], 'the double-spent payment is gone');
    // Its inputs are spent by the sweep in the new branch.
    const newBlock = bitcoin.Block.fromHex(await result(node, 'getblock', [connected[1], 0]));
    const droppedTx = bitcoin.Transaction.fromHex(await result(node, 'getrawtransaction', [dropped, 0, oldHashes[1]]));
    const spends = (tx: bitcoin.Transaction) => tx.ins.map((i) => `${Buffer.from(i.hash).toString('hex')}:${i.index}`);
    assert.ok(newBlock.transactions!.some((tx) => tx.getId() !== dropped && spends(tx).join() === spends(droppedTx).join()));
  });

  test('replace publishes R for the original then A for the replacement', async (t) => {
    const node = await startNode(t);
    const original = await node.pay(ADDRESSES.p2wpkh, 80_000);
    const originalFee = (await result(node, 'getmempoolentry', [original])).fees.base;
    const tap = await Tap.open(t, node);
    const replacement = await node.replace(original, { outputs: [{ address: ADDRESSES.p2tr, sats: 79_000 }] });

    const seqs = (await tap.waitFor('sequence', 2)).map((n) => parseSequence(n.body));
    assert.deepEqual(seqs.map((s) => `${s.label}:${s.hash}`), [`R:${original}`, `A:${replacement}`]);
    assert.equal(seqs[1]!.mempoolSeq, seqs[0]!.mempoolSeq! + 1n);
    assert.deepEqual(await result(node, 'getrawmempool'), [replacement]);
    const { reply } = await call(node, 'getmempoolentry', [original]);
    assert.deepEqual(reply.error, { code: -5, message: 'Transaction not in mempool' });
    assert.ok((await result(node, 'getmempoolentry', [replacement])).fees.base > originalFee);
    // What the original spent is spent by the replacement now; the replacement's own outputs by nothing.
    const input = bitcoin.Transaction.fromHex(await result(node, 'getrawtransaction', [replacement])).ins[0]!;
    const spent = { txid: Buffer.from(input.hash).reverse().toString('hex'), vout: input.index };
    assert.deepEqual(await result(node, 'gettxspendingprevout', [[spent, { txid: replacement, vout: 0 }]]), [
      { ...spent, spendingtxid: replacement },
      { txid: replacement, vout: 0 },
    ]);

    const raw = await tap.waitFor('rawtx', 1);
    const tx = bitcoin.Transaction.fromBuffer(raw[0]!.body);
    assert.equal(tx.getId(), replacement);
    assert.notEqual(replacement, original);
    assert.equal(bitcoin.address.fromOutputScript(tx.outs[0]!.script, REGTEST), ADDRESSES.p2tr);

    // Nothing to the original address at all.
    const gone = await node.replace(replacement, { outputs: [] });
    const sweep = bitcoin.Transaction.fromHex(await result(node, 'getrawtransaction', [gone]));
    assert.equal(sweep.outs.length, 1);
    assert.equal(bitcoin.address.fromOutputScript(sweep.outs[0]!.script, REGTEST), node.walletAddress);
  });
});

describe('fake bitcoind ZMQ', () => {
  test('dropZmq loses messages but the counters advance, so the subscriber sees a gap', async (t) => {
    const node = await startNode(t);
    const tap = await Tap.open(t, node, ['rawtx', 'hashtx']);
    node.dropZmq((m) => m.topic === 'rawtx' && m.sequence % 2 === 1);
    for (let i = 0; i < 4; i++) await node.pay(ADDRESSES.p2wpkh, 1000 + i);
    await tap.waitFor('hashtx', 4);
    assert.deepEqual(tap.of('rawtx').map((n) => n.seq), [0, 2]);
    assert.deepEqual(tap.of('hashtx').map((n) => n.seq), [0, 1, 2, 3]);
    node.dropZmq(null);
    await node.pay(ADDRESSES.p2wpkh, 5000);
    assert.deepEqual((await tap.waitFor('rawtx', 3)).map((n) => n.seq), [0, 2, 4]);
  });

  test('stopZmq loses what happens meanwhile; startZmq rebinds the same endpoint', async (t) => {
    const node = await startNode(t);
    const tap = await Tap.open(t, node, ['hashtx']);
    const endpoint = node.zmqEndpoint;
    await node.pay(ADDRESSES.p2wpkh, 1000);
    await tap.waitFor('hashtx', 1);
    await node.stopZmq();
    await node.pay(ADDRESSES.p2wpkh, 2000);
    await node.startZmq();
    assert.equal(node.zmqEndpoint, endpoint);
    await node.waitForSubscriber(['hashtx'], WAIT_MS); // the SUB socket reconnects by itself
    const third = await node.pay(ADDRESSES.p2wpkh, 3000);
    const notes = await tap.waitFor('hashtx', 2);
    assert.deepEqual(notes.map((n) => n.seq), [0, 2]);
    assert.equal(notes[1]!.body.toString('hex'), third);
  });

  test('getzmqnotifications lists each enabled topic at the endpoint', async (t) => {
    const node = await startNode(t, { zmqTopics: ['sequence', 'rawtx', 'hashblock'] });
    assert.deepEqual(await result(node, 'getzmqnotifications'), [
      { type: 'pubhashblock', address: node.zmqEndpoint, hwm: 1000 },
      { type: 'pubrawtx', address: node.zmqEndpoint, hwm: 1000 },
      { type: 'pubsequence', address: node.zmqEndpoint, hwm: 1000 },
    ]);
    assert.match(node.zmqEndpoint, /^tcp:\/\/127\.0\.0\.1:\d+$/);
  });

  test('in IBD blocks are announced on sequence only, and getblockchaininfo says so', async (t) => {
    const node = await startNode(t);
    const tap = await Tap.open(t, node, ['hashblock', 'sequence']);
    node.setIbd(true);
    const info = await result(node, 'getblockchaininfo');
    assert.equal(info.initialblockdownload, true);
    assert.ok(info.verificationprogress < 1);
    const [during] = await node.mine(1);
    node.setIbd(false);
    assert.equal((await result(node, 'getblockchaininfo')).initialblockdownload, false);
    const [after] = await node.mine(1);
    await tap.waitFor('sequence', 2);
    assert.deepEqual(sequenceEvents(tap), [`C:${during}`, `C:${after}`]);
    assert.deepEqual((await tap.waitFor('hashblock', 1)).map((n) => n.body.toString('hex')), [after]);
  });
});

describe('fake bitcoind RPC', () => {
  test('scantxoutset finds an output, with amounts printed as bitcoind prints them', async (t) => {
    const node = await startNode(t);
    const txid = await node.pay(ADDRESSES.p2wpkh, 12_345);
    await node.mine(1);
    const desc = `addr(${ADDRESSES.p2wpkh})`;
    const { text, reply } = await call(node, 'scantxoutset', ['start', [`${desc}#${descriptorChecksum(desc)}`]]);
    assert.equal(reply.result.success, true);
    assert.equal(reply.result.height, node.tipHeight);
    assert.deepEqual(
      reply.result.unspents.map((u: any) => [u.txid, u.vout, u.height, u.confirmations, u.coinbase, u.desc]),
      [[txid, 0, node.tipHeight, 1, false, `${desc}#${descriptorChecksum(desc)}`]],
    );
    assert.match(text, /"amount":0\.00012345,/);
    assert.match(text, /"total_amount":0\.00012345\}/);
    assert.equal(await result(node, 'scantxoutset', ['status']), null);
  });

  test('answers errors with bitcoind codes, messages and HTTP statuses', async (t) => {
    const node = await startNode(t, { initialBlocks: 5 });
    const unknownTxid = 'ab'.repeat(32);
    const invalid: Array<{ method: string; params: unknown[] | Record<string, unknown>; status: number; code: number; message: string | RegExp }> = [
      { method: 'nosuchmethod', params: [], status: 404, code: -32601, message: 'Method not found' },
      { method: 'getblockhash', params: [6], status: 500, code: -8, message: 'Block height out of range' },
      { method: 'getblockhash', params: [-1], status: 500, code: -8, message: 'Block height out of range' },
      { method: 'getblockhash', params: ['1'], status: 500, code: -3, message: /^Wrong type passed:\n\{\n {4}"Position 1 \(height\)": "JSON value of type string is not of expected type number"\n\}$/ },
      { method: 'getblockhash', params: [], status: 500, code: -1, message: 'getblockhash height' },
      { method: 'getblock', params: [unknownTxid], status: 500, code: -5, message: 'Block not found' },
      { method: 'getblock', params: ['00'], status: 500, code: -8, message: "blockhash must be of length 64 (not 2, for '00')" },
      { method: 'getblockheader', params: { blockhash: unknownTxid, nope: 1 }, status: 500, code: -8, message: 'Unknown named parameter nope' },
      {
        method: 'getrawtransaction',
        params: [unknownTxid],
        status: 500,
        code: -5,
        message: 'No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. Use gettransaction for wallet transactions.',
      },
      { method: 'getrawtransaction', params: [unknownTxid, 0, unknownTxid], status: 500, code: -5, message: 'Block hash not found' },
      { method: 'getmempoolentry', params: [unknownTxid], status: 500, code: -5, message: 'Transaction not in mempool' },
      { method: 'getrawmempool', params: [true, true], status: 500, code: -8, message: 'Verbose results cannot contain mempool sequence values.' },
      { method: 'gettxspendingprevout', params: [[]], status: 500, code: -8, message: 'Invalid parameter, outputs are missing' },
      { method: 'gettxspendingprevout', params: [[{ txid: unknownTxid }]], status: 500, code: -3, message: 'Missing vout' },
      { method: 'gettxspendingprevout', params: [[{ txid: unknownTxid, vout: '0' }]], status: 500, code: -3, message: 'JSON value of type string for field vout is not of expected type number' },
      { method: 'gettxspendingprevout', params: [[{ txid: unknownTxid, vout: 0, n: 1 }]], status: 500, code: -3, message: 'Unexpected key n' },
      { method: 'gettxspendingprevout', params: [[{ txid: unknownTxid, vout: -1 }]], status: 500, code: -8, message: 'Invalid parameter, vout cannot be negative' },
      { method: 'gettxspendingprevout', params: [[{ txid: 'ab', vout: 0 }]], status: 500, code: -8, message: "txid must be of length 64 (not 2, for 'ab')" },
      { method: 'scantxoutset', params: ['start', ['addr(notanaddress)']], status: 500, code: -5, message: 'Address is not valid' },
      { method: 'scantxoutset', params: ['start', ['addr(x)#aaaaaaaa']], status: 500, code: -5, message: /^Provided checksum 'aaaaaaaa' does not match computed checksum '[a-z0-9]{8}'$/ },
      { method: 'scantxoutset', params: ['begin', []], status: 500, code: -8, message: "Invalid action 'begin'" },
    ];
    for (const c of invalid) {
      const { status, reply } = await call(node, c.method, c.params);
      assert.equal(status, c.status, `${c.method} ${JSON.stringify(c.params)}`);
      assert.equal(reply.result, null);
      assert.equal(reply.id, 'test');
      assert.equal(reply.error!.code, c.code, `${c.method}: ${reply.error!.message}`);
      if (typeof c.message === 'string') assert.equal(reply.error!.message, c.message);
      else assert.match(reply.error!.message, c.message);
    }

    const valid: Array<{ method: string; params: unknown[] | Record<string, unknown>; check: (r: any) => void }> = [
      { method: 'getblockheader', params: { blockhash: node.tipHash, verbose: false }, check: (r) => assert.equal(r.length, 160) },
      { method: 'getblock', params: [node.tipHash, true], check: (r) => assert.equal(r.tx.length, 1) },
      { method: 'uptime', params: [], check: (r) => assert.equal(r, 0) },
      { method: 'getnetworkinfo', params: [], check: (r) => assert.equal(typeof r.version, 'number') },
      { method: 'getblockchaininfo', params: [], check: (r) => assert.deepEqual([r.chain, r.blocks, r.headers, r.pruned], ['regtest', 5, 5, false]) },
    ];
    for (const c of valid) c.check(await result(node, c.method, c.params as unknown[]));
  });

  test('speaks JSON-RPC 2.0, batches, and rejects malformed JSON with HTTP 500', async (t) => {
    const node = await startNode(t, { initialBlocks: 3 });
    const v2 = await post(node, JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'nosuchmethod' }));
    assert.equal(v2.status, 200);
    assert.deepEqual(await v2.json(), { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 7 });
    const notification = await post(node, JSON.stringify({ jsonrpc: '2.0', method: 'getblockcount' }));
    assert.equal(notification.status, 204);

    const batch = await post(node, JSON.stringify([{ id: 1, method: 'getblockcount' }, { id: 2, method: 'nosuchmethod' }]));
    assert.equal(batch.status, 200);
    assert.deepEqual(await batch.json(), [
      { result: 3, error: null, id: 1 },
      { result: null, error: { code: -32601, message: 'Method not found' }, id: 2 },
    ]);

    const malformed = await post(node, '{"method": getblockcount');
    assert.equal(malformed.status, 500);
    assert.equal(await malformed.text(), '{"result":null,"error":{"code":-32700,"message":"Parse error"},"id":null}\n');
  });

  test('wrong credentials get 401 like bitcoind; the cookie file works', async (t) => {
    const node = await startNode(t, { initialBlocks: 1 });
    const wrong = await post(node, '{"method":"getblockcount"}', basicAuth(node.rpcUser, 'wrong'));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get('www-authenticate'), 'Basic realm="jsonrpc"');
    assert.equal(await wrong.text(), '');
    const none = await fetch(node.rpcUrl, { method: 'POST', body: '{}', signal: AbortSignal.timeout(WAIT_MS) });
    assert.equal(none.status, 401);

    const cookie = readFileSync(node.cookieFile, 'utf8');
    assert.match(cookie, /^__cookie__:[0-9a-f]{64}$/);
    assert.equal(statSync(node.cookieFile).mode & 0o777, 0o600);
    const [user, password] = cookie.split(':') as [string, string];
    const ok = await post(node, '{"method":"getblockcount","id":1}', basicAuth(user, password));
    assert.deepEqual(await ok.json(), { result: 1, error: null, id: 1 });
  });

  test('stopRpc refuses connections; startRpc serves again on the same port', async (t) => {
    const node = await startNode(t, { initialBlocks: 2 });
    const url = node.rpcUrl;
    await node.stopRpc();
    await assert.rejects(call(node, 'getblockcount'), TypeError);
    await node.startRpc();
    assert.equal(node.rpcUrl, url);
    assert.equal(await result(node, 'getblockcount'), 2);
  });

  test('pruned blocks answer -1 "Block not available (pruned data)"', async (t) => {
    const node = await startNode(t, { initialBlocks: 20 });
    node.pruneBelow(10);
    const pruned = await result(node, 'getblockhash', [5]);
    const { status, reply } = await call(node, 'getblock', [pruned]);
    assert.equal(status, 500);
    assert.deepEqual(reply.error, { code: -1, message: 'Block not available (pruned data)' });
    assert.equal((await result(node, 'getblockheader', [pruned])).height, 5, 'headers are kept');
    assert.ok(await result(node, 'getblock', [await result(node, 'getblockhash', [10])]));
    const info = await result(node, 'getblockchaininfo');
    assert.equal(info.pruned, true);
    assert.equal(info.pruneheight, 10);
  });

  test('warmup answers -28 until it ends', async (t) => {
    const node = await startNode(t, { initialBlocks: 1 });
    node.setWarmup('Loading block index…');
    const { status, reply } = await call(node, 'getblockchaininfo');
    assert.equal(status, 500);
    assert.deepEqual(reply.error, { code: -28, message: 'Loading block index…' });
    node.setWarmup(null);
    assert.equal(await result(node, 'getblockcount'), 1);
  });

  test('with txindex, getrawtransaction finds confirmed transactions without a block hash', async (t) => {
    const node = await startNode(t, { txindex: true });
    const txid = await node.pay(ADDRESSES.p2wpkh, 4000);
    await node.mine(1);
    assert.equal((await result(node, 'getrawtransaction', [txid, true])).confirmations, 1);
    const { reply } = await call(node, 'getrawtransaction', ['cd'.repeat(32)]);
    assert.equal(reply.error!.message, 'No such mempool or blockchain transaction. Use gettransaction for wallet transactions.');
  });
});

describe('fake bitcoind controls and helpers', () => {
  test('descriptor checksums match Bitcoin Core', () => {
    const valid = [{ body: 'raw(76a91411b366edfc0a8b66feebae5c2e25a7b6a5d1cf3188ac)', checksum: 'fm24fxxy' }];
    for (const v of valid) assert.equal(descriptorChecksum(v.body), v.checksum);
    assert.equal(descriptorChecksum('addr(é)'), null);
  });

  test('refuses payments it could not make', async (t) => {
    const node = await startNode(t, { initialBlocks: 101 });
    const invalid: Array<{ run: () => Promise<unknown>; error: RegExp }> = [
      { run: () => node.pay('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu', 1000), error: /not a regtest address/ },
      { run: () => node.pay(ADDRESSES.p2wpkh, 293), error: /below the dust threshold of 294 sats/ },
      { run: () => node.pay(ADDRESSES.p2pkh, 545), error: /below the dust threshold of 546 sats/ },
      { run: () => node.pay(ADDRESSES.p2wpkh, 1.5), error: /positive integer/ },
      { run: () => node.payMany([]), error: /at least one/ },
      { run: () => node.mine(1, { include: ['ef'.repeat(32)] }), error: /not in the mempool/ },
      { run: () => node.reorg(0), error: /depth must be an integer/ },
      { run: () => node.replace('ef'.repeat(32)), error: /not in the mempool/ },
    ];
    for (const c of invalid) await assert.rejects(c.run(), c.error);
    // One mature coinbase (block 1): a second payment must wait for a block.
    await node.pay(ADDRESSES.p2wpkh, 1000);
    await assert.rejects(node.pay(ADDRESSES.p2wpkh, 1000), /not enough mature funds/);
  });
});
