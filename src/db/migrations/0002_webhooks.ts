import type { Migration } from './index.ts';

// Webhook endpoints, deliveries and their attempts. Secrets are stored sealed
// (AES-256-GCM, key in the data dir's secret.key), never in clear.
export const m0002_webhooks: Migration = {
  version: 2,
  name: '0002_webhooks',
  sql: `
ALTER TABLE stores ADD COLUMN callback_secret TEXT;
ALTER TABLE stores ADD COLUMN callback_secret_previous TEXT;
ALTER TABLE stores ADD COLUMN callback_secret_previous_expires_at INTEGER;

CREATE TABLE webhook_endpoints (
  id                         TEXT PRIMARY KEY,
  store_id                   TEXT NOT NULL REFERENCES stores(id),
  url                        TEXT NOT NULL,
  description                TEXT,
  enabled_events             TEXT NOT NULL DEFAULT '["*"]',
  enabled                    INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
  secret                     TEXT NOT NULL,
  secret_previous            TEXT,
  secret_previous_expires_at INTEGER,
  created_at                 INTEGER NOT NULL,
  deleted_at                 INTEGER
) STRICT;
CREATE INDEX webhook_endpoints_store ON webhook_endpoints(store_id);

-- Events not yet turned into deliveries.
ALTER TABLE events ADD COLUMN dispatched INTEGER NOT NULL DEFAULT 0;
CREATE INDEX events_undispatched ON events(seq) WHERE dispatched = 0;

CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  event_id         TEXT NOT NULL REFERENCES events(id),
  store_id         TEXT NOT NULL REFERENCES stores(id),
  -- NULL for an invoice's callback_url.
  endpoint_id      TEXT REFERENCES webhook_endpoints(id),
  -- Endpoint id, or 'callback:' + origin: the unit of fairness between receivers.
  target           TEXT NOT NULL,
  url              TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('attempting', 'success', 'failed', 'dead_letter')),
  -- Attempts in the current cycle (a replay starts a new cycle of 7).
  attempts         INTEGER NOT NULL DEFAULT 0,
  total_attempts   INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,
  last_attempt_at  INTEGER,
  last_status_code INTEGER,
  last_error       TEXT,
  response_body    TEXT,
  created_at       INTEGER NOT NULL,
  completed_at     INTEGER,
  UNIQUE (event_id, target)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, target) WHERE status = 'attempting';
CREATE INDEX webhook_deliveries_target_due ON webhook_deliveries(target, next_attempt_at) WHERE status = 'attempting';
CREATE INDEX webhook_deliveries_store_status ON webhook_deliveries(store_id, status, id);

CREATE TABLE webhook_attempts (
  delivery_id   TEXT NOT NULL REFERENCES webhook_deliveries(id),
  n             INTEGER NOT NULL,
  started_at    INTEGER NOT NULL,
  duration_ms   INTEGER NOT NULL,
  status_code   INTEGER,
  error         TEXT,
  response_body TEXT,
  PRIMARY KEY (delivery_id, n)
) STRICT, WITHOUT ROWID;
`,
};
