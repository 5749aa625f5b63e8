import type { Migration } from './index.ts';

// The watch index ordered its entries by output script within a watch_until
// value: every new invoice landed on a random page of it, one more page for
// every commit to write to the WAL and checkpoint. created_at before the
// script keeps new entries at the end of their range; the index still covers
// the start-up rebuild (rowid and script come from it alone).
export const m0004_watch_index_order: Migration = {
  version: 4,
  name: '0004_watch_index_order',
  sql: `
DROP INDEX invoices_watch_until;
CREATE INDEX invoices_watch ON invoices(watch_until, created_at, script_hex);
`,
};
