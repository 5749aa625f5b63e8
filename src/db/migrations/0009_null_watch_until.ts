import type { Migration } from './index.ts';

// Till from 4766678 to d17239c wrote migration 0003 with a nullable
// watch_until, NULL meaning "watched for as long as its state needs"; dd61d9d
// changed 0003 in place to the sentinel (WATCH_WHILE_NEEDED), and the watch
// queries to `watch_until > ?`, which skip NULL. A database already at schema
// 3 never ran 0003 again: its pending invoices were no longer watched, and a
// payment to one was never recorded. NULL becomes the sentinel it meant; a
// finished invoice among them gets its real end at the next chain start
// (settleWatchEnds), as those of other old databases do. Elsewhere the column
// is NOT NULL and nothing matches.
export const m0009_null_watch_until: Migration = {
  version: 9,
  name: '0009_null_watch_until',
  sql: `
UPDATE invoices SET watch_until = 9007199254740991 WHERE watch_until IS NULL;
`,
};
