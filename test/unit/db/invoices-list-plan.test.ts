import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openDatabase } from '../../../src/db/connection.ts';
import { listInvoicesSql, type ListQuery } from '../../../src/db/invoices.ts';
import { tempDir } from '../../helpers/temp.ts';

// A list page must come from invoice_list in id order, never a scan or a
// sort of a store's invoices: a store can hold millions. Only the invoices not
// listed yet (migration 0016) are read by rowid and sorted. Every shape of GET
// /v1/invoices (status or not, created_* or not, either cursor or both) is
// checked against SQLite's query plan on the migrated schema.

const BASE: ListQuery = { storeId: 'sto_x', livemode: false, limit: 20 };
const STATUS = [{}, { status: 'paid' as const }];
const CREATED = [{}, { createdGte: 1 }, { createdLte: 2 }, { createdGte: 1, createdLte: 2 }];
const CURSORS = [{}, { startingAfter: 'inv_b' }, { endingBefore: 'inv_a' }, { startingAfter: 'inv_b', endingBefore: 'inv_a' }];

test('every list query shape searches invoice_list and reads only the unlisted invoices', (t) => {
  const db = openDatabase(tempDir(t));
  t.after(() => db.close());
  for (const status of STATUS) {
    for (const created of CREATED) {
      for (const cursor of CURSORS) {
        const q: ListQuery = { ...BASE, ...status, ...created, ...cursor };
        const plan = (db.prepare(`EXPLAIN QUERY PLAN ${listInvoicesSql(q)}`).all({ storeId: q.storeId, livemode: 0, limit: 21, ...status, ...created, ...cursor }) as Array<{ detail: string }>).map((r) => r.detail);
        const shape = JSON.stringify(q);
        const listed = plan.filter((d) => / invoice_list\b/.test(d));
        // invoice_list holds created_at: no invoice is read for a listed one.
        for (const step of listed) {
          assert.match(step, /^SEARCH invoice_list USING PRIMARY KEY \(store_id=\? AND livemode=\? AND status=\?/, `${shape}: ${step}`);
        }
        // One search per status without a status filter, one with it.
        assert.equal(listed.length, 'status' in status ? 1 : 5, shape);
        // The invoices themselves only above the mark, by rowid; theirs is the one sort.
        const onInvoices = plan.filter((d) => / invoices\b/.test(d));
        assert.deepEqual(onInvoices, ['SEARCH invoices USING INTEGER PRIMARY KEY (rowid>?)'], `${shape}: ${plan.join('; ')}`);
        assert.equal(plan.filter((d) => d.includes('TEMP B-TREE')).length, 1, `${shape}: ${plan.join('; ')}`);
      }
    }
  }
});
