import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../../src/domain/event-types.ts';

test('docs/WEBHOOKS.md says when each event type is sent, and names no other', () => {
  const doc = readFileSync(new URL('../../../docs/WEBHOOKS.md', import.meta.url), 'utf8');
  const table = doc.slice(doc.indexOf('## Event types'), doc.indexOf('\n## ', doc.indexOf('## Event types') + 1));
  const rows = [...table.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(rows, [...EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE]);
});
