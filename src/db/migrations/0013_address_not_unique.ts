import type { Migration } from './index.ts';

// UNIQUE(address) was the one random-order insert left in invoice creation:
// on a large database each new invoice wrote a page of its index at a place
// of its own (about a third of a group commit's pages at 1M invoices), and
// creation ran ~20 % faster, with a third less p99, without it
// (docs/PERFORMANCE.md, twenty-sixth round). No two invoices share an address
// by construction instead: a key belongs to one store and environment (by
// what its addresses derive from, src/services/xpubs.ts, which also repairs
// keys accepted twice before that rule), and its next index moves in the
// transaction that uses it. SQLite cannot drop a column's UNIQUE, so the
// table is rebuilt (rowids kept: the chain watcher's handles) with its
// indexes; foreign keys are off during migrations and checked before commit
// (src/db/migrate.ts).
export const m0013_address_not_unique: Migration = {
  version: 13,
  name: '0013_address_not_unique',
  sql: `
CREATE TABLE invoices_rebuilt (
  id                     TEXT PRIMARY KEY,
  store_id               TEXT NOT NULL REFERENCES stores(id),
  livemode               INTEGER NOT NULL CHECK (livemode IN (0, 1)),
  status                 TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'late_paid', 'cancelled', 'expired')),
  amount_sats            INTEGER NOT NULL CHECK (amount_sats > 0),
  fiat_amount_cents      INTEGER,
  currency               TEXT,
  rate_cents_per_btc     INTEGER,
  rate_source            TEXT,
  rate_fetched_at        INTEGER,
  xpub_id                TEXT NOT NULL REFERENCES xpubs(id),
  address_index          INTEGER NOT NULL,
  address                TEXT NOT NULL,
  script_hex             TEXT NOT NULL,
  confirmations_required INTEGER NOT NULL,
  late_window_ms         INTEGER NOT NULL,
  expires_at             INTEGER NOT NULL,
  created_at             INTEGER NOT NULL,
  paid_at                INTEGER,
  cancelled_at           INTEGER,
  expired_at             INTEGER,
  metadata               TEXT NOT NULL DEFAULT '{}',
  callback_url           TEXT,
  -- Bumped on every change: the SSE event id of the snapshot.
  version                INTEGER NOT NULL DEFAULT 1,
  watch_until            INTEGER NOT NULL DEFAULT 9007199254740991,
  wait_ended_at          INTEGER
) STRICT;
INSERT INTO invoices_rebuilt (rowid, id, store_id, livemode, status, amount_sats, fiat_amount_cents, currency,
  rate_cents_per_btc, rate_source, rate_fetched_at, xpub_id, address_index, address, script_hex,
  confirmations_required, late_window_ms, expires_at, created_at, paid_at, cancelled_at, expired_at, metadata,
  callback_url, version, watch_until, wait_ended_at)
SELECT rowid, id, store_id, livemode, status, amount_sats, fiat_amount_cents, currency,
  rate_cents_per_btc, rate_source, rate_fetched_at, xpub_id, address_index, address, script_hex,
  confirmations_required, late_window_ms, expires_at, created_at, paid_at, cancelled_at, expired_at, metadata,
  callback_url, version, watch_until, wait_ended_at
FROM invoices ORDER BY rowid;
DROP TABLE invoices;
ALTER TABLE invoices_rebuilt RENAME TO invoices;
CREATE INDEX invoices_list_status ON invoices(store_id, livemode, status, id);
CREATE INDEX invoices_pending_due ON invoices(expires_at) WHERE status = 'pending';
CREATE INDEX invoices_watch ON invoices(watch_until, created_at, script_hex);
`,
};
