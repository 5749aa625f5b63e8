import type { Migration } from './index.ts';

// Two list indexes, (store, mode, id) and (store, mode, status, id), each had
// an insertion point per store: with creations spread over many stores each
// new invoice wrote a page of each to the WAL (the bench counted ~51 of ~180
// pages a group commit for each). The status index alone serves both lists:
// without a status filter a page is the newest ids of each status, merged
// (src/db/invoices.ts).
export const m0006_one_list_index: Migration = {
  version: 6,
  name: '0006_one_list_index',
  sql: `
DROP INDEX invoices_list;
`,
};
