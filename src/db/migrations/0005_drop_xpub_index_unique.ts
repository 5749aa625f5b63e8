import type { Migration } from './index.ts';

// UNIQUE(xpub_id, address_index) on invoices repeated what UNIQUE(address)
// already guarantees (one xpub and index always derive the same address) and
// no query reads it: it cost a page write per new invoice, at a different
// place for every xpub.
export const m0005_drop_xpub_index_unique: Migration = {
  version: 5,
  name: '0005_drop_xpub_index_unique',
  sql: `
DROP INDEX invoices_xpub_index;
`,
};
