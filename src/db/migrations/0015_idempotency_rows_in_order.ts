import type { Migration } from './index.ts';

// Idempotency keys were the table's own key (WITHOUT ROWID), each row holding
// the whole answer (~1 KB): a random key put every new row on a page of its
// own, about three rows to a page, so a group commit of creations that all
// sent a key wrote a page (and often a split) per creation. Rows now go in
// the order written, and only the small (api key, key) pairs sit in random
// order, in an index: with a key on every creation, 8,300-8,800 ->
// 11,300-11,600 creations/s and p99 20-35 -> 14-15 ms (docs/PERFORMANCE.md,
// twenty-eighth round). The rows are copied, so replays keep working across
// the upgrade.
export const m0015_idempotency_rows_in_order: Migration = {
  version: 15,
  name: '0015_idempotency_rows_in_order',
  sql: `
CREATE TABLE idempotency_keys_rebuilt (
  api_key_id   TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status       INTEGER NOT NULL,
  body         TEXT NOT NULL,
  created_at   INTEGER NOT NULL
) STRICT;
INSERT INTO idempotency_keys_rebuilt (api_key_id, key, request_hash, status, body, created_at)
  SELECT api_key_id, key, request_hash, status, body, created_at FROM idempotency_keys ORDER BY created_at;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_rebuilt RENAME TO idempotency_keys;
CREATE UNIQUE INDEX idempotency_keys_key ON idempotency_keys(api_key_id, key);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
`,
};
