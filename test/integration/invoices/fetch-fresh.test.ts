import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { DB_FILE } from '../../../src/db/connection.ts';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { postInvoice } from './invoice-api.ts';

// Fetched and listed invoices are served from a cache of their JSON views;
// these are the ways an invoice changes, each seen by the very next request.

describe('a fetched or listed invoice is never stale', () => {
  for (const transport of TRANSPORTS) {
    test(`a change through the API shows at once (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = (await postInvoice(till, store.key, { amount_sats: 5000 })).body;
      assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.status, 'pending');
      assert.equal((await call(till, 'GET', '/v1/invoices', { key: store.key })).body.data[0].status, 'pending');
      const sim = await call(till, 'POST', `/v1/invoices/${inv.id}/simulate`, { key: store.key, body: { event: 'payment_detected' } });
      assert.equal(sim.status, 200);
      const fetched = await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key });
      assert.equal(fetched.body.amount_received_sats, 5000);
      assert.deepEqual(fetched.body, sim.body);
      assert.deepEqual((await call(till, 'GET', '/v1/invoices', { key: store.key })).body.data[0], sim.body);
      await call(till, 'POST', `/v1/invoices/${inv.id}/simulate`, { key: store.key, body: { event: 'paid' } });
      assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.status, 'paid');
    });

    test(`a change committed by another process shows at the next request (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const inv = (await postInvoice(till, store.key, { amount_sats: 5000, metadata: { order: '1' } })).body;
      assert.deepEqual((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.metadata, { order: '1' });
      assert.deepEqual((await call(till, 'GET', '/v1/invoices', { key: store.key })).body.data[0].metadata, { order: '1' });
      // What a repair on the database from another process (sqlite3, a future CLI command) looks like.
      const other = new Database(join(till.config.dataDir, DB_FILE));
      other.prepare('UPDATE invoices SET metadata = ? WHERE id = ?').run('{"order":"2"}', inv.id);
      other.close();
      assert.deepEqual((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: store.key })).body.metadata, { order: '2' });
      assert.deepEqual((await call(till, 'GET', '/v1/invoices', { key: store.key })).body.data[0].metadata, { order: '2' });
    });

    test(`a cached list page shows a new, cancelled or expired invoice at once (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const store = setupStore(till);
      const other = setupStore(till, { label: 'other' });
      const list = async (query = '', key = store.key) => (await call(till, 'GET', `/v1/invoices${query}`, { key })).body;
      const a = (await postInvoice(till, store.key, { amount_sats: 5000, expires_in_minutes: 5 })).body;
      const mine = (await postInvoice(till, other.key, { amount_sats: 1000 })).body;
      assert.deepEqual((await list()).data.map((i: any) => i.id), [a.id]);
      assert.deepEqual((await list('?limit=1&status=pending')).data.map((i: any) => i.id), [a.id]);
      assert.deepEqual((await list('', other.key)).data.map((i: any) => i.id), [mine.id]);

      till.clock.advance(1000); // ids order by creation time, and the clock stands still
      const b = (await postInvoice(till, store.key, { amount_sats: 6000 })).body;
      assert.deepEqual((await list()).data.map((i: any) => i.id), [b.id, a.id], 'a creation drops its store\'s pages');
      assert.deepEqual((await list('?limit=1&status=pending')).data.map((i: any) => i.id), [b.id]);
      assert.deepEqual((await list('', other.key)).data.map((i: any) => i.id), [mine.id], 'another store\'s page is its own');

      await call(till, 'POST', `/v1/invoices/${b.id}/cancel`, { key: store.key });
      assert.deepEqual((await list()).data.map((i: any) => i.status), ['cancelled', 'pending']);
      assert.deepEqual((await list('?status=pending')).data.map((i: any) => i.id), [a.id]);

      till.clock.advance(5 * 60_000);
      assert.equal(await expireDueInvoices(till.rt.ctx), 1);
      assert.deepEqual((await list()).data.map((i: any) => i.status), ['cancelled', 'expired']);
      assert.deepEqual((await list('?status=pending')).data, []);
    });

    test(`another store's key still gets not_found for a cached invoice (${transport})`, async (t) => {
      const till = await startTestTill(t, { transport });
      const mine = setupStore(till, { label: 'mine' });
      const theirs = setupStore(till, { label: 'theirs' });
      const inv = (await postInvoice(till, mine.key, { amount_sats: 5000 })).body;
      assert.equal((await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: mine.key })).status, 200);
      const res = await call(till, 'GET', `/v1/invoices/${inv.id}`, { key: theirs.key });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'not_found');
    });
  }
});
