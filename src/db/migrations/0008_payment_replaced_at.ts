import type { Migration } from './index.ts';

// When Till found a payment replaced or gone. Its invoice stays watched for
// 14 days after that (a node that kept the transaction may still mine it),
// counted from here rather than from first_seen_at, which a fee bump inherits
// from what it replaced. Payments replaced before this version get their
// first sighting: the watch they had.
export const m0008_payment_replaced_at: Migration = {
  version: 8,
  name: '0008_payment_replaced_at',
  sql: `
ALTER TABLE payments ADD COLUMN replaced_at INTEGER;
UPDATE payments SET replaced_at = first_seen_at WHERE status = 'replaced';
`,
};
