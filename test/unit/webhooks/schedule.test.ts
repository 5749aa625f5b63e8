import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ATTEMPT_TIMEOUT_MS, classifyOutcome, MAX_ATTEMPTS, nextAttemptAt, type AttemptOutcome, type AttemptResult } from '../../../src/webhooks/schedule.ts';

const START = Date.parse('2026-11-21T10:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;

describe('retry schedule', () => {
  test('limits from the spec', () => {
    assert.equal(ATTEMPT_TIMEOUT_MS, 10_000);
    assert.equal(MAX_ATTEMPTS, 7);
  });

  test('each retry waits 1 min, 5 min, 30 min, 2 h, 12 h, 24 h after the attempt before', () => {
    const delays = [1 * MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 12 * HOUR, 24 * HOUR];
    delays.forEach((delay, i) => {
      assert.equal(nextAttemptAt(i + 1, START), START + delay, `after attempt ${i + 1}`);
    });
  });

  test('a delivery that always fails is attempted 7 times over 38 h 36 min, then dead', () => {
    // Attempts take no time here; the worker passes the real end of each attempt.
    const attemptTimes = [START];
    let due = nextAttemptAt(1, START);
    while (due !== null) {
      attemptTimes.push(due);
      assert.ok(attemptTimes.length <= MAX_ATTEMPTS, 'schedule ends');
      due = nextAttemptAt(attemptTimes.length, due);
    }
    const offsets = attemptTimes.map((t) => t - START);
    assert.deepEqual(offsets, [0, 1 * MIN, 6 * MIN, 36 * MIN, 2 * HOUR + 36 * MIN, 14 * HOUR + 36 * MIN, 38 * HOUR + 36 * MIN]);
  });

  test('null after the 7th failure (dead_letter)', () => {
    assert.equal(nextAttemptAt(7, START), null);
    assert.notEqual(nextAttemptAt(6, START), null);
  });

  test('attempt counts outside 1..7 are a bug, not a schedule', () => {
    for (const bad of [0, -1, 8, 1.5, Number.NaN]) {
      assert.throws(() => nextAttemptAt(bad, START), RangeError, String(bad));
    }
  });
});

describe('classifyOutcome', () => {
  const table: [AttemptResult, AttemptOutcome][] = [
    [{ status: 200 }, 'success'],
    [{ status: 201 }, 'success'],
    [{ status: 202 }, 'success'],
    [{ status: 204 }, 'success'],
    [{ status: 299 }, 'success'],
    [{ status: 400 }, 'failed'],
    [{ status: 401 }, 'failed'],
    [{ status: 404 }, 'failed'],
    [{ status: 408 }, 'failed'],
    [{ status: 410 }, 'failed'],
    [{ status: 429 }, 'failed'],
    [{ status: 499 }, 'failed'],
    [{ status: 500 }, 'retry'],
    [{ status: 502 }, 'retry'],
    [{ status: 503 }, 'retry'],
    [{ status: 504 }, 'retry'],
    [{ status: 599 }, 'retry'],
    [{ status: 301 }, 'retry'],
    [{ status: 302 }, 'retry'],
    [{ status: 307 }, 'retry'],
    [{ status: 308 }, 'retry'],
    [{ status: 100 }, 'retry'],
    [{ status: 600 }, 'retry'],
    [{ error: 'ECONNREFUSED' }, 'retry'],
    [{ error: 'ECONNRESET' }, 'retry'],
    [{ error: 'timeout after 10000 ms' }, 'retry'],
    [{}, 'retry'],
    // The status line decides even when reading the body failed afterwards.
    [{ status: 200, error: 'body timeout' }, 'success'],
    [{ status: 404, error: 'body timeout' }, 'failed'],
    [{ status: 503, error: 'body timeout' }, 'retry'],
  ];
  for (const [result, expected] of table) {
    test(`${JSON.stringify(result)} -> ${expected}`, () => assert.equal(classifyOutcome(result), expected));
  }
});
