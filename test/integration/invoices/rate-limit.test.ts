// 100 invoice creations per minute per API key (spec 8); the 101st is 429
// rate_limited with Retry-After and error.retry_after_seconds (DESIGN "Errors").
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { databasePath } from '../../../src/db/connection.ts';
import { mintApiKey } from '../../../src/services/api-keys.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { holdWriteLock } from '../../helpers/write-lock.ts';
import { call, setupStore, TRANSPORTS } from '../../helpers/till-server.ts';
import { assertError, assertInvoice, assertWritesNothing, countWrites, postInvoice, useTill } from './invoice-api.ts';

for (const transport of TRANSPORTS) {
  describe(`rate limit (${transport})`, () => {
    const till = useTill({ transport });

    test('100 pass, the 101st -> 429 with Retry-After; another key of the store is not affected; 60 s later it passes', async () => {
      const s = setupStore(till());
      const other = mintApiKey(till().rt.ctx, s.storeId, 'test');
      const before = countWrites(till());
      const burst = await Promise.all(Array.from({ length: 100 }, (_, i) => postInvoice(till(), s.key, { amount_sats: 1000 + i })));
      for (const res of burst) assertInvoice(res);
      assert.equal(countWrites(till()).invoices, before.invoices + 100);

      till().clock.advance(15_000);
      const refused = await assertWritesNothing(till(), () => postInvoice(till(), s.key, { amount_sats: 1000 }));
      const error = assertError(refused, 429, 'rate_limited');
      assert.equal(error.retry_after_seconds, 45);
      assert.equal(refused.headers.get('retry-after'), '45');

      // A bad body is told of as such while limited: the 400s come first (docs/DECISIONS.md).
      assertError(await postInvoice(till(), s.key, { amount_sats: 0 }), 400, 'invalid_amount');
      assertError(await postInvoice(till(), s.key, { amount_sats: 1000, currency: 'EUR', amount: '5' }), 400, 'validation_error');
      // Reads are not creations; another key of the same store has its own budget.
      assert.equal((await call(till(), 'GET', '/v1/invoices?limit=1', { key: s.key })).status, 200);
      assertInvoice(await postInvoice(till(), other.key, { amount_sats: 1000 }));

      till().clock.advance(44_999);
      const stillRefused = await postInvoice(till(), s.key, { amount_sats: 1000 });
      assert.equal(assertError(stillRefused, 429, 'rate_limited').retry_after_seconds, 1);
      till().clock.advance(1);
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
    });

    test('a retry sent while its original is still being written, on the last slot: one invoice, the retry is its replay, not a 429', async (t) => {
      const s = setupStore(till());
      const before = countWrites(till()).invoices;
      for (let i = 0; i < 99; i++) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 + i }));
      const body = { amount_sats: 5000, metadata: { order: '42' } };
      // Another connection (the CLI) holds the write lock: the original waits in the write queue, and its client,
      // timing out, retries with the same key and body (spec 7.3).
      const lock = holdWriteLock(t, databasePath(till().config.dataDir));
      const original = postInvoice(till(), s.key, body, { 'idempotency-key': 'order-42' });
      await sleep(100);
      const retry = postInvoice(till(), s.key, body, { 'idempotency-key': 'order-42' });
      await sleep(100);
      lock.release();
      const [a, b] = await Promise.all([original, retry]);
      assertInvoice(a);
      assert.equal(b.status, 201, b.text);
      assert.equal(b.text, a.text);
      assert.equal(b.headers.get('idempotent-replayed'), 'true');
      assert.equal(countWrites(till()).invoices, before + 100);
    });

    test('the window slides: hits spread over a minute free one slot at a time', async () => {
      const s = setupStore(till());
      for (let i = 0; i < 100; i++) {
        assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
        till().clock.advance(500); // 100 hits over 50 s
      }
      // Now t = 50 s after the first hit: it frees at 60 s.
      assert.equal(assertError(await postInvoice(till(), s.key, { amount_sats: 1 }), 429, 'rate_limited').retry_after_seconds, 10);
      till().clock.advance(10_000);
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1 }));
      assertError(await postInvoice(till(), s.key, { amount_sats: 1 }), 429, 'rate_limited');
      till().clock.advance(500);
      assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1 }));
    });

    test('refused requests do not spend the budget: 50 refusals, then 100 creations pass', async () => {
      const s = setupStore(till());
      const refusals = await Promise.all([
        ...Array.from({ length: 25 }, () => postInvoice(till(), s.key, { amount_sats: 0 })),
        ...Array.from({ length: 25 }, () => postInvoice(till(), s.key, { amount: '1.00', currency: 'EUR' })),
      ]);
      for (const res of refusals) assert.equal(res.status, 400);
      const burst = await Promise.all(Array.from({ length: 100 }, () => postInvoice(till(), s.key, { amount_sats: 1000 })));
      for (const res of burst) assertInvoice(res);
      assertError(await postInvoice(till(), s.key, { amount_sats: 1000 }), 429, 'rate_limited');
    });

    test('requests refused after the body checks (409 no_active_xpub) do not spend the budget either', async () => {
      const s = setupStore(till(), { xpub: null });
      for (let i = 0; i < 100; i++) assertError(await postInvoice(till(), s.key, { amount_sats: 1000 }), 409, 'no_active_xpub');
      addXpub(till().rt.ctx, { storeId: s.storeId, env: 'test', key: testTpub(s.storeId) });
      const burst = await Promise.all(Array.from({ length: 100 }, () => postInvoice(till(), s.key, { amount_sats: 1000 })));
      for (const res of burst) assertInvoice(res);
      assertError(await postInvoice(till(), s.key, { amount_sats: 1000 }), 429, 'rate_limited');
    });

    test('idempotent replays are answered while the key is limited, and do not count', async () => {
      const s = setupStore(till());
      const original = await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'before-limit' });
      assertInvoice(original);
      // 20 replays of it, then 99 more creations: all 100 creations pass.
      for (let i = 0; i < 20; i++) assert.equal((await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'before-limit' })).status, 201);
      const burst = await Promise.all(Array.from({ length: 99 }, () => postInvoice(till(), s.key, { amount_sats: 1000 })));
      for (const res of burst) assertInvoice(res);
      assertError(await postInvoice(till(), s.key, { amount_sats: 1000 }), 429, 'rate_limited');
      const replay = await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'before-limit' });
      assert.equal(replay.status, 201);
      assert.equal(replay.text, original.text);
    });
  });
}
