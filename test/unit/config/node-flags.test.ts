import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { NODE_FLAGS } from '../../../cli/node-flags.ts';

// Till's Node flags are written in three places that cannot import them.
const root = new URL('../../../', import.meta.url);
const flags = NODE_FLAGS.join(' ');

test('the shebang of cli/till.ts passes the Node flags', () => {
  const first = readFileSync(new URL('cli/till.ts', root), 'utf8').split('\n')[0];
  assert.equal(first, `#!/usr/bin/env -S node ${flags}`);
});

test('the package.json scripts that run Till pass them too', () => {
  const { scripts } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(scripts.start, `node ${flags} cli/till.ts serve --demo`);
  assert.equal(scripts.till, `node ${flags} cli/till.ts`);
});
