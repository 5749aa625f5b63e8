import type { Migration } from './index.ts';

// Two migrations were edited in place after a Till on main had applied them;
// a database that applied the first form never runs the second.
// - 0003 from 4766678 to d17239c (22 November): watch_until nullable, NULL
//   meaning "watched for as long as its state needs". dd61d9d made it the
//   WATCH_WHILE_NEEDED sentinel and the watch queries `watch_until > ?`, which
//   skip NULL: such a database's pending invoices were no longer watched, and
//   a payment to one was never recorded. NULL becomes the sentinel it meant
//   (new invoices are written with it, whatever the column's default), and the
//   one-time settling of finished invoices' watch ends runs again for them.
// - 0007 from 519a00f to 02c8492 (25 November): the table was mempool_spends;
//   706be6b renamed it payment_spends. It starts empty, as on an upgrade from
//   schema 6 (docs/CONFIG.md, "Upgrading").
// Elsewhere none of this matches anything.
export const m0009_repair_edited_schemas: Migration = {
  version: 9,
  name: '0009_repair_edited_schemas',
  sql: `
DELETE FROM meta WHERE key = 'watch_ends_settled' AND EXISTS (SELECT 1 FROM invoices WHERE watch_until IS NULL);
UPDATE invoices SET watch_until = 9007199254740991 WHERE watch_until IS NULL;

CREATE TABLE IF NOT EXISTS payment_spends (
  outpoint TEXT NOT NULL,
  txid     TEXT NOT NULL,
  PRIMARY KEY (outpoint, txid)
) STRICT, WITHOUT ROWID;
DROP TABLE IF EXISTS mempool_spends;
`,
};
