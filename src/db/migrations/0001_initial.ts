import type { Migration } from './index.ts';

// Times are epoch milliseconds, money is integer sats (fiat: integer cents).
export const m0001_initial: Migration = {
  version: 1,
  name: '0001_initial',
  sql: `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE stores (
  id                     TEXT PRIMARY KEY,
  name                   TEXT NOT NULL,
  mode                   TEXT NOT NULL CHECK (mode IN ('live', 'test')),
  confirmations_required INTEGER NOT NULL DEFAULT 1 CHECK (confirmations_required BETWEEN 0 AND 6),
  expiry_minutes         INTEGER NOT NULL DEFAULT 30 CHECK (expiry_minutes BETWEEN 5 AND 120),
  late_window_minutes    INTEGER NOT NULL DEFAULT 10080 CHECK (late_window_minutes BETWEEN 0 AND 525600),
  logo_url               TEXT,
  brand_color            TEXT,
  created_at             INTEGER NOT NULL,
  archived_at            INTEGER
) STRICT;

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  store_id     TEXT NOT NULL REFERENCES stores(id),
  env          TEXT NOT NULL CHECK (env IN ('live', 'test')),
  secret_hash  BLOB NOT NULL UNIQUE,
  last4        TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER
) STRICT;
CREATE INDEX api_keys_store ON api_keys(store_id);

CREATE TABLE xpubs (
  id                TEXT PRIMARY KEY,
  store_id          TEXT NOT NULL REFERENCES stores(id),
  env               TEXT NOT NULL CHECK (env IN ('live', 'test')),
  key_text          TEXT NOT NULL,
  script_type       TEXT NOT NULL,
  key_network       TEXT NOT NULL,
  gap_limit         INTEGER NOT NULL DEFAULT 20 CHECK (gap_limit BETWEEN 6 AND 100000),
  next_index        INTEGER NOT NULL DEFAULT 0,
  last_funded_index INTEGER,
  last_funded_at    INTEGER,
  status            TEXT NOT NULL CHECK (status IN ('active', 'retired')),
  created_at        INTEGER NOT NULL,
  retired_at        INTEGER
) STRICT;
CREATE UNIQUE INDEX xpubs_one_active ON xpubs(store_id, env) WHERE status = 'active';
CREATE INDEX xpubs_key_text ON xpubs(key_text);

-- Addresses derived ahead of use; a row is consumed (deleted) by the
-- transaction that hands its index to an invoice.
CREATE TABLE address_pool (
  xpub_id    TEXT NOT NULL REFERENCES xpubs(id),
  idx        INTEGER NOT NULL,
  address    TEXT NOT NULL,
  script_hex TEXT NOT NULL,
  PRIMARY KEY (xpub_id, idx)
) STRICT, WITHOUT ROWID;

CREATE TABLE invoices (
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
  address                TEXT NOT NULL UNIQUE,
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
  version                INTEGER NOT NULL DEFAULT 1
) STRICT;
CREATE UNIQUE INDEX invoices_xpub_index ON invoices(xpub_id, address_index);
CREATE INDEX invoices_list ON invoices(store_id, livemode, id);
CREATE INDEX invoices_list_status ON invoices(store_id, livemode, status, id);
CREATE INDEX invoices_pending_due ON invoices(expires_at) WHERE status = 'pending';

CREATE TABLE payments (
  txid          TEXT NOT NULL,
  vout          INTEGER NOT NULL,
  invoice_id    TEXT NOT NULL REFERENCES invoices(id),
  amount_sats   INTEGER NOT NULL CHECK (amount_sats > 0),
  status        TEXT NOT NULL CHECK (status IN ('mempool', 'confirmed', 'replaced')),
  block_hash    TEXT,
  block_height  INTEGER,
  -- As of the last block processed; the watcher refreshes it while it matters.
  confirmations INTEGER NOT NULL DEFAULT 0,
  first_seen_at INTEGER NOT NULL,
  PRIMARY KEY (txid, vout)
) STRICT, WITHOUT ROWID;
-- Serves the ordered load of an invoice's payments without a sort.
CREATE INDEX payments_invoice ON payments(invoice_id, first_seen_at, txid, vout);

-- The transactional outbox: written in the same transaction as the change.
CREATE TABLE events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  type       TEXT NOT NULL,
  store_id   TEXT NOT NULL REFERENCES stores(id),
  invoice_id TEXT REFERENCES invoices(id),
  livemode   INTEGER NOT NULL CHECK (livemode IN (0, 1)),
  created_at INTEGER NOT NULL,
  body       TEXT NOT NULL
) STRICT;
CREATE INDEX events_invoice ON events(invoice_id);

CREATE TABLE idempotency_keys (
  api_key_id   TEXT NOT NULL,
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status       INTEGER NOT NULL,
  body         TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (api_key_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
`,
};
