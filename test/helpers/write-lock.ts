import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';

/**
 * Another connection to the database at `path` (as the CLI would be) takes the
 * write lock and holds it until `release()`. Meanwhile a 5 ms interval counts
 * the turns of this process's event loop, which a write blocked in SQLite's
 * busy handler would stop.
 */
export function holdWriteLock(t: TestContext, path: string) {
  const other = new Database(path);
  t.after(() => other.close());
  other.exec('BEGIN IMMEDIATE');
  let turns = 0;
  const ticking = setInterval(() => turns++, 5);
  // Cleared however the test ends: a failed assertion must not leave it holding the process open.
  t.after(() => clearInterval(ticking));
  return {
    /**
     * Waits `ms` with the lock held, then asserts the loop kept turning. A write
     * blocked in the busy handler stops it until the lock goes (no turn at all);
     * a loaded machine only turns it less often, so a few turns are proof enough
     * (a turn every ~13 ms was asked before, and failed once on a busy machine).
     */
    async assertLoopTurnsFor(ms: number): Promise<void> {
      const before = turns;
      await sleep(ms);
      const turned = turns - before;
      assert.ok(turned >= 3, `the event loop turned ${turned} times in ${ms} ms while the lock was held`);
    },
    release(): void {
      other.exec('COMMIT');
    },
  };
}
