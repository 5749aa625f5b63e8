import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { DB_FILE } from '../../../src/db/connection.ts';
import { call, setupStore, startTestTill, TRANSPORTS } from '../../helpers/till-server.ts';
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
