import type { Migration } from './index.ts';

// When a pending invoice's wait past expires_at for on-time payments ended
// while the chain was being caught up with (src/domain/invoice-state.ts): it
// could not expire then, and the fact after the catch-up no longer shows what
// it waited for, so its expiry (and late window) would be dated at expires_at.
export const m0012_invoice_wait_ended: Migration = {
  version: 12,
  name: '0012_invoice_wait_ended',
  sql: `
ALTER TABLE invoices ADD COLUMN wait_ended_at INTEGER;
`,
};
