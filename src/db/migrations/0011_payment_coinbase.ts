import type { Migration } from './index.ts';

// Whether a payment is a coinbase output: it counts as confirmed only once
// mature (100 confirmations, src/domain/invoice-amounts.ts), and blocks
// re-evaluate its invoice until then, which the partial index finds without
// reading every recent payment. Payments recorded before this version are
// taken as ordinary ones (SQL cannot tell), and count as they did.
export const m0011_payment_coinbase: Migration = {
  version: 11,
  name: '0011_payment_coinbase',
  sql: `
ALTER TABLE payments ADD COLUMN coinbase INTEGER NOT NULL DEFAULT 0 CHECK (coinbase IN (0, 1));
CREATE INDEX payments_coinbase_height ON payments(block_height) WHERE coinbase = 1;
`,
};
