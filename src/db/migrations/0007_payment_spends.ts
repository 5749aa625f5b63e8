import type { Migration } from './index.ts';

// The outpoints spent by each payment's transaction. A new transaction paying
// an invoice that spends one of them replaced it (RBF, a double spend): the
// replaced payment must stop counting in the same judgement, not at the next
// mempool check, or both count and a fee-bumped underpayment covers the
// invoice. Kept while the transaction is unconfirmed or mined in the last
// 1,000 blocks (a reorg may put it back in the mempool).
export const m0007_payment_spends: Migration = {
  version: 7,
  name: '0007_payment_spends',
  sql: `
CREATE TABLE payment_spends (
  outpoint TEXT NOT NULL, -- <txid>:<vout> of the output spent
  txid     TEXT NOT NULL, -- the spending transaction, which pays an invoice
  PRIMARY KEY (outpoint, txid)
) STRICT, WITHOUT ROWID;
`,
};
