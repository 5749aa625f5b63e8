import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import { BIP32Factory } from 'bip32';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';
import { LAST_RECEIVE_INDEX } from '../../../src/bitcoin/derive.ts';
import { databasePath } from '../../../src/db/connection.ts';
import { pruneUsedAddresses, refillAddressPool } from '../../../src/services/address-pool.ts';
import { skipIndexes } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { setupStore, startTestTill } from '../../helpers/till-server.ts';
import { postInvoice } from './invoice-api.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';

// Invoices take the wallet's receive addresses in order, whether the address
// was derived ahead into the pool or in line; used pool rows are removed in
// bulk by the refill, never handed out twice.

/** The wallet's receive address m/0/index (a plain tpub means P2PKH), by the stock bip32 + bitcoinjs path. */
function walletAddress(tpub: string, index: number): string {
  const node = BIP32Factory(ecc).fromBase58(tpub, bitcoin.networks.testnet).derive(0).derive(index);
  return bitcoin.payments.p2pkh({ pubkey: Buffer.from(node.publicKey), network: bitcoin.networks.regtest }).address!;
}

/** A test till with one test store of this label: its context, its active key and that key's tpub. */
async function tillWithStore(t: TestContext, label: string) {
  const till = await startTestTill(t);
  const store = setupStore(till, { label });
  const { ctx } = till.rt;
  const xpub = ctx.repos.xpubs.findActive(store.storeId, 'test')!;
  return { till, store, ctx, xpub, xpubId: xpub.id, tpub: testTpub(label) };
}

test('addresses come in wallet order from the pool and from in-line derivation alike; used pool rows are pruned', async (t) => {
  const { till, store, ctx, xpubId, tpub } = await tillWithStore(t, 'pool');
  const poolRows = () => ctx.db.prepare('SELECT idx FROM address_pool WHERE xpub_id = ? ORDER BY idx').pluck().all(xpubId) as number[];
  const create = async () => (await postInvoice(till, store.key, { amount_sats: 1000 })).body.address as string;

  assert.deepEqual(poolRows(), [], 'nothing derived ahead yet');
  const inLine = [await create(), await create()];
  await refillAddressPool(ctx, xpubId, 4);
  assert.deepEqual(poolRows(), [2, 3, 4, 5]);
  const pooled = [await create(), await create(), await create()];
  assert.deepEqual([...inLine, ...pooled], [0, 1, 2, 3, 4].map((i) => walletAddress(tpub, i)));
  assert.deepEqual(poolRows(), [2, 3, 4, 5], 'creation reads its pooled row; the refill removes it');

  await refillAddressPool(ctx, xpubId, 4);
  assert.deepEqual(poolRows(), [5, 6, 7, 8], 'used rows gone, topped up to 4 ahead of the next index');
  assert.equal(await create(), walletAddress(tpub, 5));
  const all = ctx.db.prepare('SELECT address FROM invoices WHERE store_id = ?').pluck().all(store.storeId) as string[];
  assert.equal(new Set(all).size, 6, 'no address handed out twice');
});

test('pooled rows read ahead a window at a time: runs longer than a window, a pool topped up after its window was read, and a pool run dry all give the wallet\'s addresses in order', async (t) => {
  const { till, store, ctx, xpubId, tpub } = await tillWithStore(t, 'window');
  const createMany = async (n: number) => {
    const answers = await Promise.all(Array.from({ length: n }, () => postInvoice(till, store.key, { amount_sats: 1000 })));
    assert.deepEqual(new Set(answers.map((r) => r.status)), new Set([201]));
  };
  const addresses = () => ctx.db.prepare('SELECT address FROM invoices WHERE store_id = ? ORDER BY rowid').pluck().all(store.storeId) as string[];

  await refillAddressPool(ctx, xpubId, 10); // rows 0..9
  await createMany(5); // a window of the 10 rows there are
  await refillAddressPool(ctx, xpubId, 40); // rows up to 44, added after that window was read
  await createMany(20);
  await createMany(45); // the pool runs dry at 45: the rest derived in line
  till.clock.advance(61_000); // the key's 100 creations a minute
  await refillAddressPool(ctx, xpubId, 100); // rows 70..169
  await createMany(80); // past a window of 64 rows
  const handed = addresses();
  assert.equal(handed.length, 150);
  assert.deepEqual(handed.toSorted(), Array.from({ length: 150 }, (_, i) => walletAddress(tpub, i)).toSorted(), 'indexes 0 to 149, each once');
});

test('a refill works in pieces, each its own write: a write queued beside it commits after the first piece, not after all', async (t) => {
  const { till, store, ctx, xpubId } = await tillWithStore(t, 'pieces');
  const pooled = () => ctx.db.prepare('SELECT count(*) FROM address_pool WHERE xpub_id = ?').pluck().get(xpubId) as number;

  // Derivation stalls the event loop: 100 addresses in one piece was 10-17 ms of it.
  const refill = refillAddressPool(ctx, xpubId, 100);
  await setImmediate(); // the refill's first write is in, committing
  const seenByNeighbour = await ctx.writes.run(pooled);
  assert.ok(seenByNeighbour > 0 && seenByNeighbour < 100, `the neighbour saw ${seenByNeighbour} of 100 pooled addresses`);
  assert.equal(await refill, 100);
  assert.equal(pooled(), 100);

  // A busy key's used rows between two refills: deleted in one commit, they held every request waiting for it.
  const insert = ctx.db.prepare("INSERT INTO address_pool (xpub_id, idx, address, script_hex) VALUES (?, ?, 'used', '00')");
  ctx.db.transaction(() => {
    for (let idx = 100; idx < 2_500; idx++) insert.run(xpubId, idx);
    ctx.db.prepare('UPDATE xpubs SET next_index = 2500 WHERE id = ?').run(xpubId);
  })();
  const prune = pruneUsedAddresses(ctx, xpubId);
  await setImmediate();
  const leftForNeighbour = await ctx.writes.run(pooled);
  assert.ok(leftForNeighbour > 0 && leftForNeighbour < 2_400, `the neighbour saw ${leftForNeighbour} of 2,400 used rows`);
  await prune;
  assert.equal(pooled(), 0, 'every used row deleted in the end');
});

test('a refill waits for another process\'s write lock without stopping the event loop, then writes', async (t) => {
  const { till, store, ctx, xpubId } = await tillWithStore(t, 'locked');
  const lock = holdWriteLock(t, databasePath(till.config.dataDir));
  const refill = refillAddressPool(ctx, xpubId, 4);
  await lock.assertLoopTurnsFor(200);
  assert.equal(ctx.db.prepare('SELECT count(*) FROM address_pool WHERE xpub_id = ?').pluck().get(xpubId), 0, 'nothing written yet');
  lock.release();
  assert.equal(await refill, 4);
  assert.deepEqual(ctx.db.prepare('SELECT idx FROM address_pool WHERE xpub_id = ? ORDER BY idx').pluck().all(xpubId), [0, 1, 2, 3]);
});

test('a key\'s last receive address (index 2^31 - 1) is handed out; after it creation answers 409, the pool stops there', async (t) => {
  const { till, store, ctx, xpub, tpub } = await tillWithStore(t, 'last-index');
  // Two billion invoices on one key, by hand.
  ctx.db.prepare('UPDATE xpubs SET next_index = ? WHERE id = ?').run(LAST_RECEIVE_INDEX - 149, xpub.id);
  assert.equal(await refillAddressPool(ctx, xpub.id, 200), 150, 'the pool fills up to the last index, no further');
  assert.equal(ctx.repos.addressPool.highestIndex(xpub.id), LAST_RECEIVE_INDEX);
  ctx.db.prepare('UPDATE xpubs SET next_index = ? WHERE id = ?').run(LAST_RECEIVE_INDEX, xpub.id);
  const last = await postInvoice(till, store.key, { amount_sats: 1000 });
  assert.equal(last.status, 201, last.text);
  assert.equal(last.body.address, walletAddress(tpub, LAST_RECEIVE_INDEX));
  const past = await postInvoice(till, store.key, { amount_sats: 1000 });
  assert.equal(past.status, 409);
  assert.equal(past.body.error.code, 'gap_limit_exceeded');
  assert.match(past.body.error.message, /every receive address .* till xpub add/);
  assert.equal(ctx.repos.xpubs.get(xpub.id)!.nextIndex, LAST_RECEIVE_INDEX + 1, 'the refused creation handed out no index');
  assert.equal(await refillAddressPool(ctx, xpub.id, 200), 0);
});

test('skipping indexes (after restoring an old backup): the next invoice takes the address after them, pooled or not', async (t) => {
  const { till, store, ctx, xpub, tpub } = await tillWithStore(t, 'skip');
  await refillAddressPool(ctx, xpub.id, 20);
  assert.equal((await postInvoice(till, store.key, { amount_sats: 1000 })).body.address, walletAddress(tpub, 0));
  assert.equal(skipIndexes(ctx, xpub.id, 5).nextIndex, 6);
  assert.equal(ctx.repos.addressPool.lowestIndex(xpub.id), 6, 'the skipped pool rows are gone');
  assert.equal((await postInvoice(till, store.key, { amount_sats: 1000 })).body.address, walletAddress(tpub, 6));
  assert.throws(() => skipIndexes(ctx, xpub.id, 0), /count must be an integer from 1/);
  assert.throws(() => skipIndexes(ctx, 'xpb_nope', 1), /no xpub xpb_nope/);
});
