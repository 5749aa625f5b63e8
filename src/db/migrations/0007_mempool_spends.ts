import type { Migration } from './index.ts';

// The outpoints spent by the transaction of each unconfirmed payment. A new
// transaction paying an invoice that spends one of them replaced it (RBF, a
// double spend): the replaced payment must stop counting in the same
// judgement, not at the next mempool check, or both count and a fee-bumped
// underpayment covers the invoice. Rows of transactions no longer unconfirmed
// are pruned with each block.
export const m0007_mempool_spends: Migration = {
  version: 7,
  name: '0007_mempool_spends',
  sql: `
CREATE TABLE mempool_spends (
  outpoint TEXT NOT NULL, -- <txid>:<vout> of the output spent
  txid     TEXT NOT NULL, -- the spending transaction
  PRIMARY KEY (outpoint, txid)
) STRICT, WITHOUT ROWID;
`,
};
