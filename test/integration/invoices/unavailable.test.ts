// The 503s of spec 7.1, each induced for real over the socket: the call
// would have succeeded without the condition, writes nothing, and succeeds
// once the condition is gone (safe to retry, same Idempotency-Key).
import assert from 'node:assert/strict';
import { existsSync, renameSync, statfsSync } from 'node:fs';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { databasePath } from '../../../src/db/connection.ts';
import { startFakeRateSource } from '../../fakes/rate-source.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';
import { assertError, assertInvoice, assertWritesNothing, nextIndex, postInvoice } from './invoice-api.ts';

const MINUTE = 60_000;

describe('503 responses (socket)', () => {
  test('chain_syncing: live creation refused while bitcoind is in initial block download; test mode is not', async (t) => {
    const till = await startTestTill(t);
    const live = setupStore(till, { mode: 'live' });
    const sandbox = setupStore(till, { mode: 'test' });
    till.rt.ctx.chain.initialBlockDownload = true;
    for (const body of [{ amount_sats: 1000 }, { amount: '5.00', currency: 'USD' }]) {
      const res = await assertWritesNothing(till, () => postInvoice(till, live.key, body, { 'idempotency-key': 'ibd' }));
      assertError(res, 503, 'chain_syncing');
    }
    assert.equal(nextIndex(till, live.storeId, 'live'), 0);
    assertInvoice(await postInvoice(till, sandbox.key, { amount_sats: 1000 }));
    assertError(await postInvoice(till, setupStore(till, { mode: 'live', xpub: null }).key, { amount_sats: 1000 }), 409, 'no_active_xpub');
    // Reads still work.
    assert.equal((await call(till, 'GET', '/v1/invoices', { key: live.key })).status, 200);

    till.rt.ctx.chain.initialBlockDownload = false;
    const created = await postInvoice(till, live.key, { amount_sats: 1000 }, { 'idempotency-key': 'ibd' });
    assertInvoice(created);
    assert.equal(created.headers.get('idempotent-replayed'), null);
  });

  test('chain_syncing: a till that watches no chain (bitcoind.enabled = false, the demo) refuses live invoices; test ones are made', async (t) => {
    const till = await startTestTill(t, { chainWatched: false });
    const live = setupStore(till, { mode: 'live' });
    const res = await assertWritesNothing(till, () => postInvoice(till, live.key, { amount_sats: 1000 }, { 'idempotency-key': 'no-chain' }));
    assert.match(String(assertError(res, 503, 'chain_syncing').message), /watches no chain \(bitcoind.enabled = false/);
    assert.equal(nextIndex(till, live.storeId, 'live'), 0);
    assertInvoice(await postInvoice(till, setupStore(till, { mode: 'test' }).key, { amount_sats: 1000 }), 201);
  });

  test('chain_syncing: a new till refuses live invoices until it has learnt the chain tip once', async (t) => {
    const till = await startTestTill(t);
    const live = setupStore(till, { mode: 'live' });
    // As with a watcher whose bitcoind has not answered since this first start.
    till.rt.ctx.chain.caughtUp = false;
    const res = await assertWritesNothing(till, () => postInvoice(till, live.key, { amount_sats: 1000 }, { 'idempotency-key': 'first' }));
    assert.match(String(assertError(res, 503, 'chain_syncing').message), /has not answered yet/);
    assertInvoice(await postInvoice(till, setupStore(till, { mode: 'test' }).key, { amount_sats: 1000 }), 201);
    // A till that has seen the chain before catches up from its stored tip: nothing can be missed.
    till.rt.ctx.repos.chainBlocks.insert({ height: 100, hash: '11'.repeat(32), prevHash: '22'.repeat(32) }, till.clock.now());
    assertInvoice(await postInvoice(till, live.key, { amount_sats: 1000 }, { 'idempotency-key': 'first' }));
  });

  test('disk_full: under TILL_MIN_FREE_DISK_MB creation, changes and webhook settings are refused and nothing is written', async (t) => {
    const probe = await startTestTill(t);
    const { bavail, bsize } = statfsSync(probe.config.dataDir);
    const floorMb = Math.ceil((bavail * bsize) / 2 ** 20) + 1024;
    if (floorMb > 1_000_000) {
      t.skip(`more than ${floorMb - 1024} MB free: the floor setting cannot go that high`);
      return;
    }
    const till = await startTestTill(t, { env: { TILL_MIN_FREE_DISK_MB: String(floorMb) } });
    const s = setupStore(till);
    // Made before the floor applies: the invoice a change would be written to.
    till.rt.ctx.config.minFreeDiskMb = 0;
    const inv = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    const hooks = `/v1/stores/${s.storeId}/webhooks`;
    const endpoint = (await call(till, 'POST', hooks, { key: s.key, body: { url: 'https://shop.example/hooks' } })).body;
    till.rt.ctx.config.minFreeDiskMb = floorMb;

    const refusals = await assertWritesNothing(till, () =>
      Promise.all([
        postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'disk' }),
        postInvoice(till, s.key, { amount: '5.00', currency: 'USD' }),
        call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key }),
        call(till, 'POST', `/v1/invoices/${inv.id}/simulate`, { key: s.key, body: { event: 'paid' } }),
        call(till, 'POST', hooks, { key: s.key, body: { url: 'https://shop.example/other' } }),
        call(till, 'POST', `${hooks}/${endpoint.id}`, { key: s.key, body: { description: 'x' } }),
        call(till, 'DELETE', `${hooks}/${endpoint.id}`, { key: s.key }),
        call(till, 'POST', `${hooks}/${endpoint.id}/rotate-secret`, { key: s.key }),
        call(till, 'POST', `${hooks}/${endpoint.id}/test`, { key: s.key }),
        call(till, 'POST', `/v1/stores/${s.storeId}/callback-secret/rotate`, { key: s.key }),
      ]),
    );
    for (const res of refusals) assert.match(String(assertError(res, 503, 'disk_full').message), new RegExp(`${floorMb} MB`));
    assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: s.key })).body.status, 'pending');
    // A 503 means the call would succeed without the condition: a store's own misconfiguration is said first.
    const bare = setupStore(till, { xpub: null });
    assertError(await assertWritesNothing(till, () => postInvoice(till, bare.key, { amount_sats: 1000 })), 409, 'no_active_xpub');

    till.rt.ctx.config.minFreeDiskMb = 0;
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'disk' }));
  });

  test('database_unavailable: the data directory cannot be found to measure its free space (moved, unmounted)', async (t) => {
    const till = await startTestTill(t, { env: { TILL_MIN_FREE_DISK_MB: '1' } });
    const s = setupStore(till);
    const dir = till.config.dataDir;
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    renameSync(dir, `${dir}.moved`);
    t.after(() => existsSync(`${dir}.moved`) && renameSync(`${dir}.moved`, dir));
    // The free space read before the move is kept for a second.
    await new Promise((r) => setTimeout(r, 1100));
    const res = await assertWritesNothing(till, () => postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'moved' }));
    assert.match(String(assertError(res, 503, 'database_unavailable').message), /ENOENT.*still there and mounted/);
    // Without the check, SQLite's open files still take writes, made durable through the WAL already open.
    till.rt.ctx.config.minFreeDiskMb = 0;
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 2000 }));
    till.rt.ctx.config.minFreeDiskMb = 1;
    renameSync(`${dir}.moved`, dir);
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'moved' }));
  });

  test('database_unavailable: another connection holds the write lock past the busy timeout', async (t) => {
    const till = await startTestTill(t, { env: { TILL_BUSY_TIMEOUT_MS: '50' } });
    const s = setupStore(till);
    const inv = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    const other = new Database(databasePath(till.config.dataDir));
    t.after(() => other.close());

    other.exec('BEGIN EXCLUSIVE');
    const started = performance.now();
    const refusals = await assertWritesNothing(till, () =>
      Promise.all([
        postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'locked' }),
        ...Array.from({ length: 5 }, () => postInvoice(till, s.key, { amount_sats: 1000 })),
        call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key }),
        call(till, 'POST', `/v1/invoices/${inv.id}/simulate`, { key: s.key, body: { event: 'paid' } }),
      ]),
    );
    for (const res of refusals) assertError(res, 503, 'database_unavailable');
    assert.ok(performance.now() - started < 5000, 'answers after the busy timeout, not the 5 s default');
    // WAL: reads go on while a writer holds the lock.
    const listed = await call(till, 'GET', '/v1/invoices', { key: s.key });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data.length, 1);
    other.exec('ROLLBACK');

    const retried = await postInvoice(till, s.key, { amount_sats: 1000 }, { 'idempotency-key': 'locked' });
    assertInvoice(retried);
    assert.equal(retried.headers.get('idempotent-replayed'), null);
    assert.equal(assertInvoice(await call(till, 'POST', `/v1/invoices/${inv.id}/cancel`, { key: s.key }), 200).status, 'cancelled');
  });

  test('rates_unavailable: fiat refused while the rate is missing or stale (source down or hanging), sats unaffected; then it recovers', async (t) => {
    const rates = await startFakeRateSource();
    t.after(() => rates.close());
    const till = await startTestTill(t, { env: { TILL_RATES: 'kraken' }, rateBaseUrls: { kraken: rates.url } });
    const s = setupStore(till);
    const fiat = { amount: '97.00', currency: 'USD' };
    const service = till.rt.ctx.rates!;

    // No rate yet: nothing has been fetched.
    assertError(await assertWritesNothing(till, () => postInvoice(till, s.key, fiat)), 503, 'rates_unavailable');
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));

    await service.refreshNow();
    const priced = assertInvoice(await postInvoice(till, s.key, fiat));
    assert.equal(priced.amount_sats, 100_000); // USD 97 at USD 97,000 per BTC
    assert.deepEqual(priced.rate, { usd_per_btc: '97000.00', source: 'kraken', fetched_at: new Date(till.clock.now()).toISOString() });

    // The source fails; the last rate serves for 10 minutes, then fiat is refused.
    rates.setMode('kraken', { kind: 'status500' });
    till.clock.advance(10 * MINUTE);
    await service.refreshNow();
    assertInvoice(await postInvoice(till, s.key, fiat));
    till.clock.advance(1);
    for (const body of [fiat, { amount: '0.01', currency: 'USD' }]) {
      const res = await assertWritesNothing(till, () => postInvoice(till, s.key, body, { 'idempotency-key': 'stale' }));
      assert.match(String(assertError(res, 503, 'rates_unavailable').message), /stale/);
    }
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));

    // The source hangs: requests do not wait on it.
    rates.setMode('kraken', { kind: 'hang' });
    const before = rates.requestCount('kraken');
    const hung = service.refreshNow();
    for (let i = 0; i < 100 && rates.requestCount('kraken') === before; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(rates.requestCount('kraken'), before + 1, 'the refresh reached the hanging source');
    const started = performance.now();
    assertError(await postInvoice(till, s.key, fiat), 503, 'rates_unavailable');
    assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000 }));
    assert.ok(performance.now() - started < 1000, 'answered while the source hangs');

    // Recovery: the hung request is cancelled, the source answers again.
    await service.stop();
    await hung;
    rates.setPrice('kraken', '98000.50');
    await service.refreshNow();
    const recovered = await postInvoice(till, s.key, fiat, { 'idempotency-key': 'stale' });
    const inv = assertInvoice(recovered);
    assert.equal(recovered.headers.get('idempotent-replayed'), null);
    assert.deepEqual(inv.rate, { usd_per_btc: '98000.50', source: 'kraken', fetched_at: new Date(till.clock.now()).toISOString() });
    assert.equal(inv.amount_sats, 98_979); // 9700 * 1e8 / 9_800_050 = 98979.08 -> 98979
  });

  test('a rate fetched while another process holds the write lock serves at once and is persisted once the lock is free, the event loop turning meanwhile', async (t) => {
    const rates = await startFakeRateSource();
    t.after(() => rates.close());
    const till = await startTestTill(t, { env: { TILL_RATES: 'kraken' }, rateBaseUrls: { kraken: rates.url } });
    const service = till.rt.ctx.rates!;
    const stored = () => (till.rt.ctx.db.prepare("SELECT value FROM meta WHERE key = 'usd_rate'").pluck().get() as string | undefined) ?? null;
    await service.refreshNow();
    assert.equal(JSON.parse(stored()!).rateCentsPerBtc, 9_700_000);

    const lock = holdWriteLock(t, databasePath(till.config.dataDir));
    rates.setPrice('kraken', '98000.50');
    const refreshed = service.refreshNow();
    await lock.assertLoopTurnsFor(200);
    assert.equal(service.current().rateCentsPerBtc, 9_800_050, 'the new rate serves before it is saved');
    assert.equal(JSON.parse(stored()!).rateCentsPerBtc, 9_700_000, 'not saved while the lock is held');
    lock.release();
    await refreshed;
    assert.equal(JSON.parse(stored()!).rateCentsPerBtc, 9_800_050);
  });
});
