import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../../src/domain/event-types.ts';
import { INVOICE_PAID_BODY, T, vectors } from './signature.fixtures.ts';

test('docs/WEBHOOKS.md says when each event type is sent, and names no other', () => {
  const doc = readFileSync(new URL('../../../docs/WEBHOOKS.md', import.meta.url), 'utf8');
  const table = doc.slice(doc.indexOf('## Event types'), doc.indexOf('\n## ', doc.indexOf('## Event types') + 1));
  const rows = [...table.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(rows, [...EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE]);
});

test('docs/WEBHOOKS.md: its invoice.paid example, as compact JSON, is the signed test vector, and the v1 it gives is the vector\'s', () => {
  const doc = readFileSync(new URL('../../../docs/WEBHOOKS.md', import.meta.url), 'utf8');
  const example = /An `invoice\.paid` delivery[^`]*```json\n([\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(example, 'the invoice.paid example is where it was');
  assert.equal(JSON.stringify(JSON.parse(example)), INVOICE_PAID_BODY);
  assert.ok(doc.includes(`t=${T},v1=${vectors[0]!.v1}`));
  assert.ok(doc.includes(`\`v1=${vectors[0]!.v1}\``));
});
