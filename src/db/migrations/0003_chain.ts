import type { Migration } from './index.ts';

// What the chain watcher needs to survive restarts and reorgs: the blocks it
// processed (to find the fork point), and for each invoice until when its
// address must be watched (WATCH_WHILE_NEEDED, the largest safe integer: for
// as long as its state needs it; a sentinel, not NULL, so "watched now" is one
// range of the index).
export const m0003_chain: Migration = {
  version: 3,
  name: '0003_chain',
  sql: `
CREATE TABLE chain_blocks (
  height       INTEGER PRIMARY KEY,
  hash         TEXT NOT NULL UNIQUE,
  prev_hash    TEXT NOT NULL,
  processed_at INTEGER NOT NULL
) STRICT;

ALTER TABLE invoices ADD COLUMN watch_until INTEGER NOT NULL DEFAULT 9007199254740991;
-- Covering: rebuilding the watch set at start reads this index only.
CREATE INDEX invoices_watch_until ON invoices(watch_until, script_hex);
CREATE INDEX payments_status ON payments(status) WHERE status = 'mempool';
CREATE INDEX payments_block_height ON payments(block_height) WHERE block_height IS NOT NULL;
`,
};
