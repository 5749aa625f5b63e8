import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startLoop } from '../../../src/services/workers.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { waitFor } from '../../helpers/wait-for.ts';

// A loop's failures reach the log, but one that fails the same way run after
// run (a full disk, every 50 ms) logs it once, not every run.

test('a background loop logs a failure once while it repeats, and again when it changes or comes back after a success', async (t) => {
  const { logger, lines } = capturedLogger();
  let outcome: Error | null = new Error('the disk is full');
  let runs = 0;
  const loop = startLoop('invoice-list', 1, logger, () => {
    runs++;
    if (outcome) throw outcome;
  });
  t.after(() => loop.stop());
  const runsMore = async (n: number) => {
    const target = runs + n;
    await waitFor(() => runs >= target, `${n} more runs`);
  };
  const failures = () => lines.filter((l) => l.msg === 'background worker failed').map((l) => `${l.worker}: ${l.err.message}`);

  await runsMore(30);
  assert.deepEqual(failures(), ['invoice-list: the disk is full']);

  outcome = new Error('database is locked');
  await runsMore(30);
  assert.deepEqual(failures(), ['invoice-list: the disk is full', 'invoice-list: database is locked']);

  outcome = null;
  await runsMore(3);
  outcome = new Error('database is locked');
  await runsMore(3);
  assert.deepEqual(failures(), ['invoice-list: the disk is full', 'invoice-list: database is locked', 'invoice-list: database is locked']);
  assert.ok(lines.every((l) => l.repeated === undefined), 'a new failure, or one after a success, carries no count');
});
