import { ApiError } from '../../domain/errors.ts';
import type { Clock } from '../../clock.ts';
import { getOrInsert } from '../../get-or-insert.ts';

/** A slot taken by take(); give it back when the request did not do what is limited. */
export interface Slot {
  release(): void;
}

/**
 * Sliding-window log: at most `limit` slots in any `windowMs` per key. A slot
 * is taken before the work and released when the work turns out not to count
 * (the spec limits invoice creations, so a refused request or an idempotent
 * replay gives its slot back); concurrent requests can never overshoot. Each
 * key keeps at most `limit` times, idle keys are dropped, so memory is bounded
 * by the keys active in the last window. Counts live in memory only: a
 * restart forgets them, which errs on the merchant's side.
 */
export class SlidingWindowLimiter {
  readonly #hits = new Map<string, number[]>();
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  #lastSweep = 0;

  constructor(limit: number, windowMs: number, clock: Clock) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#clock = clock;
  }

  /** Takes one slot, or throws 429 rate_limited with the seconds until one frees. */
  take(key: string): Slot {
    const now = this.#clock.now();
    this.#sweep(now);
    const times = getOrInsert(this.#hits, key, () => []);
    // Oldest first: drop the ones that have left the window.
    let expired = 0;
    while (expired < times.length && now - times[expired]! >= this.#windowMs) expired++;
    times.splice(0, expired);
    if (times.length >= this.#limit) {
      const retryAfter = Math.max(1, Math.ceil((times[0]! + this.#windowMs - now) / 1000));
      throw new ApiError('rate_limited', `more than ${this.#limit} invoice creations per minute on this API key; retry after ${retryAfter} s`, {
        retry_after_seconds: retryAfter,
      });
    }
    times.push(now);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const i = times.lastIndexOf(now);
        if (i >= 0) times.splice(i, 1);
      },
    };
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < this.#windowMs) return;
    this.#lastSweep = now;
    for (const [key, times] of this.#hits) {
      if (times.length === 0 || times[times.length - 1]! <= now - this.#windowMs) this.#hits.delete(key);
    }
  }
}
