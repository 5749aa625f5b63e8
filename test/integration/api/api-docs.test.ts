import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { setupStore, startTestTill } from '../../helpers/till-server.ts';

const run = promisify(execFile);
const API_MD = readFileSync(new URL('../../../docs/API.md', import.meta.url), 'utf8');

/** Each ```sh block of the doc with the ```json block that follows it, if any. */
function examples(md: string): Array<{ sh: string; expected: unknown }> {
  const blocks = [...md.matchAll(/```(sh|json)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));
  const out: Array<{ sh: string; expected: unknown }> = [];
  blocks.forEach((b, i) => {
    if (b.lang !== 'sh') return;
    const next = blocks[i + 1];
    out.push({ sh: b.text, expected: next?.lang === 'json' ? JSON.parse(next.text) : undefined });
  });
  return out;
}

/** Every field the doc shows is in the actual answer, with the same value. */
function assertShown(actual: unknown, shown: unknown, path = '$'): void {
  if (shown !== null && typeof shown === 'object' && !Array.isArray(shown)) {
    assert.ok(actual !== null && typeof actual === 'object', `${path} is an object`);
    for (const [k, v] of Object.entries(shown)) assertShown((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
  } else {
    assert.deepEqual(actual, shown, path);
  }
}

test('every curl example in docs/API.md works as documented', async (t) => {
  const till = await startTestTill(t);
  const store = setupStore(till);
  const vars: Record<string, string> = { TILL: till.url, KEY: store.key, STORE: store.storeId };
  const list = examples(API_MD);
  assert.ok(list.length >= 10, `found ${list.length} examples`);
  for (const ex of list) {
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', ex.sh], { env: { PATH: process.env.PATH, ...vars }, timeout: 20_000 });
    const actual = JSON.parse(stdout);
    if (ex.expected !== undefined) assertShown(actual, ex.expected);
    if (typeof actual.id === 'string' && actual.id.startsWith('inv_')) vars.INVOICE ??= actual.id;
    if (typeof actual.id === 'string' && actual.id.startsWith('we_')) vars.ENDPOINT ??= actual.id;
  }
});
