import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SETTINGS } from '../../../src/config.ts';

test('docs/CONFIG.md documents every setting by file key, variable and flag', () => {
  const doc = readFileSync(new URL('../../../docs/CONFIG.md', import.meta.url), 'utf8');
  for (const s of SETTINGS) {
    assert.ok(doc.includes(`| \`${s.file}\` | \`${s.env}\` | \`--${s.flag}\` |`), `${s.file} is documented`);
  }
});
