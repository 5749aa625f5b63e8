import type { Migration } from './index.ts';

// The list index (store, mode, status, id) had an insertion point per store
// in the middle of its B-tree, where SQLite's page balancing keeps the page
// that takes the next insert full: with creations spread over many stores,
// each new invoice rewrote ~1.7 of its pages (and their two write calls
// each) in the group commit. The list is now a table of its own, filled in
// batches: a few times a second the new invoices (above the mark in meta) are
// copied into it in key order, so each store gets a run of entries and its
// pages once per batch (src/db/invoices.ts, listNew). A list reads the table
// and the few invoices above the mark together, so it never misses one. A
// status change moves the invoice's entry in the same statement (trigger);
// invoices are never deleted, so no entry is left behind by one.
// docs/DECISIONS.md "Invoice lists", docs/PERFORMANCE.md thirtieth round.
export const m0016_invoice_list_table: Migration = {
  version: 16,
  name: '0016_invoice_list_table',
  sql: `
CREATE TABLE invoice_list (
  store_id   TEXT NOT NULL,
  livemode   INTEGER NOT NULL,
  status     TEXT NOT NULL,
  id         TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (store_id, livemode, status, id)
) STRICT, WITHOUT ROWID;
INSERT INTO invoice_list (store_id, livemode, status, id, created_at)
  SELECT store_id, livemode, status, id, created_at FROM invoices ORDER BY store_id, livemode, status, id;
INSERT INTO meta (key, value) SELECT 'invoices_listed_through', CAST(COALESCE(MAX(rowid), 0) AS TEXT) FROM invoices;
DROP INDEX IF EXISTS invoices_list_status;
CREATE TRIGGER invoice_list_status AFTER UPDATE OF status ON invoices WHEN NEW.status IS NOT OLD.status BEGIN
  UPDATE invoice_list SET status = NEW.status
    WHERE store_id = OLD.store_id AND livemode = OLD.livemode AND status = OLD.status AND id = OLD.id;
END;
`,
};
