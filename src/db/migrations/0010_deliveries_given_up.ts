import type { Migration } from './index.ts';

// /healthz reports the deliveries that gave up (a receiver's 4xx, or every
// attempt failed) in the last day, and leaves out those set aside because
// their endpoint was disabled or deleted (the operator's own doing). This
// partial index holds just those rows, so the count reads only recent ones,
// whatever the backlog (it covers the query: no table reads).
export const m0010_deliveries_given_up: Migration = {
  version: 10,
  name: '0010_deliveries_given_up',
  sql: `
CREATE INDEX webhook_deliveries_given_up ON webhook_deliveries(status, completed_at, last_error)
  WHERE status IN ('failed', 'dead_letter') AND (last_error IS NULL OR last_error NOT IN ('endpoint disabled', 'endpoint deleted'));
`,
};
