import type { Migration } from './index.ts';

// A count of the changes to API keys and stores, by any connection. The
// server caches each API key with its store and must drop them when another
// process (the CLI) revokes a key or changes a store; PRAGMA data_version
// says only that something was committed, which the server's own db thread
// does many times a second (webhook outcomes). When it moves, the server
// reads this count and keeps its cache if the count has not. A migration
// that rebuilds either table drops its triggers with it: it must make them
// again (the migration tests count changes on the latest schema).
const bump = `UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'auth_changes';`;

export const m0014_auth_changes: Migration = {
  version: 14,
  name: '0014_auth_changes',
  sql: `
INSERT INTO meta (key, value) VALUES ('auth_changes', '0') ON CONFLICT(key) DO NOTHING;
CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys BEGIN ${bump} END;
CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys BEGIN ${bump} END;
CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys BEGIN ${bump} END;
CREATE TRIGGER stores_inserted AFTER INSERT ON stores BEGIN ${bump} END;
CREATE TRIGGER stores_updated AFTER UPDATE ON stores BEGIN ${bump} END;
CREATE TRIGGER stores_deleted AFTER DELETE ON stores BEGIN ${bump} END;
`,
};
