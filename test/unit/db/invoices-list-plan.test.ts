import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../../src/db/connection.ts';
import { listInvoicesSql, type ListQuery } from '../../../src/db/invoices.ts';
import { tempDir } from '../../helpers/temp.ts';

// A list page must come from the list index in id order, never a scan or a
// sort of a store's invoices: a store can hold millions. Every shape of GET /v1/invoices
// (status or not, created_* or not, either cursor or both) is checked
// against SQLite's query plan on the migrated schema.

const BASE: ListQuery = { storeId: 'sto_x', livemode: false, limit: 20 };
const STATUS = [{}, { status: 'paid' as const }];
const CREATED = [{}, { createdGte: 1 }, { createdLte: 2 }, { createdGte: 1, createdLte: 2 }];
const CURSORS = [{}, { startingAfter: 'inv_b' }, { endingBefore: 'inv_a' }, { startingAfter: 'inv_b', endingBefore: 'inv_a' }];

test('every list query shape searches the list index and never scans the invoices', (t) => {
  const db = openDatabase(tempDir(t));
  t.after(() => db.close());
  for (const status of STATUS) {
    for (const created of CREATED) {
      for (const cursor of CURSORS) {
        const q: ListQuery = { ...BASE, ...status, ...created, ...cursor };
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${listInvoicesSql(q)}`).all({ storeId: q.storeId, livemode: 0, limit: 21, ...status, ...created, ...cursor }) as Array<{ detail: string }>).map((r) => r.detail);
        const onInvoices = plan.filter((d) => / invoices\b/.test(d));
        const shape = JSON.stringify(q);
        assert.ok(onInvoices.length >= 1, shape);
        // Covering when nothing but the index's columns is read.
        const index = Object.keys(created).length > 0 ? 'INDEX invoices_list_status' : 'COVERING INDEX invoices_list_status';
        for (const step of onInvoices) {
          assert.match(step, new RegExp(`^SEARCH invoices USING ${index} \\(store_id=\\? AND livemode=\\? AND status=\\?`), `${shape}: ${step}`);
        }
        // Already in id order: no sort, which would read every match first.
        assert.ok(!plan.some((d) => d.includes('TEMP B-TREE')), `${shape}: ${plan.join('; ')}`);
        // One search per status without a status filter, one with it.
        assert.equal(onInvoices.length, 'status' in status ? 1 : 5, shape);
      }
    }
  }
});
