// Idempotency-Key on POST /v1/invoices (spec 7.1, 8): a replay is the same
// status and bytes and creates nothing; a different body is a conflict; the
// cache lasts 24 hours per API key; concurrent duplicates create one invoice.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mintApiKey } from '../../../src/services/api-keys.ts';
import { rawConversation, statusCodes } from '../../helpers/raw-http.ts';
import { call, setupStore, TRANSPORTS } from '../../helpers/till-server.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { assertError, assertInvoice, assertRequestId, assertWritesNothing, countWrites, postInvoice, useTill } from './invoice-api.ts';

const DAY = 24 * 60 * 60 * 1000;

for (const transport of TRANSPORTS) {
  describe(`Idempotency-Key (${transport})`, () => {
    const till = useTill({ transport });

    test('a replay answers the same status and bytes with Idempotent-Replayed: true, and creates nothing', async () => {
      const s = setupStore(till());
      const body = { amount: '12.50', currency: 'USD', metadata: { order: '1001' }, expires_in_minutes: 15 };
      const first = await postInvoice(till(), s.key, body, { 'idempotency-key': 'order-1001' });
      assertInvoice(first);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      till().clock.advance(60_000); // a replay a minute later is still the original answer
      for (let i = 0; i < 3; i++) {
        const replay = await assertWritesNothing(till(), () => postInvoice(till(), s.key, body, { 'idempotency-key': 'order-1001' }));
        assert.equal(replay.status, first.status);
        assert.equal(replay.text, first.text);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.notEqual(assertRequestId(replay), assertRequestId(first));
      }
    });

    test('the same JSON with keys in another order is the same request', async () => {
      const s = setupStore(till());
      const first = await postInvoice(till(), s.key, { amount_sats: 1000, metadata: { a: '1', b: '2' } }, { 'idempotency-key': 'k' });
      assertInvoice(first);
      const replay = await assertWritesNothing(till(), () =>
        call(till(), 'POST', '/v1/invoices', {
          key: s.key,
          rawBody: '{ "metadata": {"b":"2","a":"1"},\n "amount_sats": 1000 }',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'k' },
        }),
      );
      assert.equal(replay.text, first.text);
    });

    test('the same key with a different body -> 409 idempotency_conflict; the original body still replays', async () => {
      const s = setupStore(till());
      const first = await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-conflict' });
      assertInvoice(first);
      for (const other of [{ amount_sats: 1001 }, { amount_sats: 1000, metadata: { a: 'b' } }, { amount: '1.00', currency: 'USD' }]) {
        const res = await assertWritesNothing(till(), () => postInvoice(till(), s.key, other, { 'idempotency-key': 'k-conflict' }));
        assertError(res, 409, 'idempotency_conflict');
      }
      const replay = await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-conflict' });
      assert.equal(replay.text, first.text);
    });

    test('a refused request is not cached: the key stays free for a corrected body', async () => {
      const s = setupStore(till());
      assertError(await postInvoice(till(), s.key, { amount_sats: 0 }, { 'idempotency-key': 'k-fix' }), 400, 'invalid_amount');
      const fixed = await postInvoice(till(), s.key, { amount_sats: 5 }, { 'idempotency-key': 'k-fix' });
      assertInvoice(fixed);
      assert.equal(fixed.headers.get('idempotent-replayed'), null);
    });

    test('after 24 hours the key is fresh: a new invoice, even with another body', async () => {
      const s = setupStore(till());
      const first = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-day' }));
      till().clock.advance(DAY - 1);
      assert.equal((await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-day' })).body.id, first.id);
      assertError(await postInvoice(till(), s.key, { amount_sats: 7 }, { 'idempotency-key': 'k-day' }), 409, 'idempotency_conflict');
      till().clock.advance(1);
      const before = countWrites(till());
      const fresh = await postInvoice(till(), s.key, { amount_sats: 7 }, { 'idempotency-key': 'k-day' });
      assert.notEqual(assertInvoice(fresh).id, first.id);
      assert.equal(fresh.headers.get('idempotent-replayed'), null);
      assert.equal(countWrites(till()).invoices, before.invoices + 1);
      // ... and the new answer is what the key replays from now on.
      assert.equal((await postInvoice(till(), s.key, { amount_sats: 7 }, { 'idempotency-key': 'k-day' })).text, fresh.text);
    });

    test('the same key on another API key is independent', async () => {
      const s = setupStore(till());
      const other = mintApiKey(till().rt.ctx, s.storeId, 'test');
      const a = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'shared' }));
      const b = assertInvoice(await postInvoice(till(), other.key, { amount_sats: 2000 }, { 'idempotency-key': 'shared' }));
      assert.notEqual(a.id, b.id);
      assert.equal(b.amount_sats, 2000);
    });

    test('10 concurrent requests with one key create exactly one invoice and all get the same body', async () => {
      const s = setupStore(till());
      const before = countWrites(till());
      const body = { amount_sats: 4242, metadata: { order: 'race' } };
      const results = await Promise.all(Array.from({ length: 10 }, () => postInvoice(till(), s.key, body, { 'idempotency-key': 'race' })));
      for (const res of results) {
        assert.equal(res.status, 201);
        assert.equal(res.text, results[0]!.text);
      }
      assert.equal(results.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1, 'exactly one original answer');
      const after = countWrites(till());
      assert.equal(after.invoices, before.invoices + 1);
      assert.equal(after.indexesHandedOut, before.indexesHandedOut + 1);
      assert.equal(after.idempotencyKeys, before.idempotencyKeys + 1);
    });

    test('10 concurrent requests with one key and different bodies: one invoice, the rest 409 idempotency_conflict', async () => {
      const s = setupStore(till());
      const before = countWrites(till());
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => postInvoice(till(), s.key, { amount_sats: 100 + i }, { 'idempotency-key': 'race-diff' })),
      );
      const created = results.filter((r) => r.status === 201);
      assert.equal(created.length, 1);
      for (const res of results) if (res.status !== 201) assertError(res, 409, 'idempotency_conflict');
      assert.equal(countWrites(till()).invoices, before.invoices + 1);
    });
  });
}

describe('Idempotency-Keys past their 24 hours (socket)', () => {
  const till = useTill({ transport: 'socket', startWorkers: true, idempotencyPurgeIntervalMs: 20 });

  test('are deleted by the server as it runs: the database does not keep every key ever sent', async () => {
    const s = setupStore(till());
    const keys = () => till().rt.ctx.db.prepare('SELECT count(*) FROM idempotency_keys').pluck().get() as number;
    for (const key of ['k-1', 'k-2']) assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': key }));
    till().clock.advance(DAY - 1);
    const young = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-3' }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(keys(), 3, 'none past its 24 hours yet');
    till().clock.advance(1);
    await waitFor(() => keys() === 1, 'the two keys of a day ago deleted', 5_000);
    assert.equal((await postInvoice(till(), s.key, { amount_sats: 1000 }, { 'idempotency-key': 'k-3' })).body.id, young.id, 'the young one still replays');
  });
});

describe('Idempotency-Key sent twice (socket)', () => {
  const till = useTill({ transport: 'socket' });

  test('two Idempotency-Key headers -> 400 validation_error naming it, nothing created (joined, they would be a key neither retry sends alone)', async () => {
    const s = setupStore(till());
    const body = '{"amount_sats":1000}';
    const request = `POST /v1/invoices HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\n` +
      `Idempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    const before = countWrites(till());
    const text = await rawConversation(till().url, request);
    assert.deepEqual(statusCodes(text), [400]);
    assert.match(text, /"code":"validation_error"[^}]*"param":"Idempotency-Key"|"param":"Idempotency-Key"[^}]*"code":"validation_error"/);
    assert.match(text, /"message":"the Idempotency-Key header is given more than once/);
    assert.deepEqual(countWrites(till()), before);
  });
});
