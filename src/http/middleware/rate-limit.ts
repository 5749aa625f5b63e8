import { ApiError } from '../../domain/errors.ts';
import type { Clock } from '../../clock.ts';

/**
 * Sliding-window log: at most `limit` hits in any `windowMs` per key. Each key
 * keeps a ring of its last `limit` hit times, so the memory is bounded by the
 * number of keys active in the last window; idle keys are dropped. Counts live
 * in memory only: a restart forgets them, which errs on the merchant's side.
 */
export class SlidingWindowLimiter {
  readonly #hits = new Map<string, { times: number[]; next: number }>();
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  #lastSweep = 0;

  constructor(limit: number, windowMs: number, clock: Clock) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#clock = clock;
  }

  /** Counts one hit, or throws 429 rate_limited with the seconds until a slot frees. */
  hit(key: string): void {
    const now = this.#clock.now();
    this.#sweep(now);
    let entry = this.#hits.get(key);
    if (!entry) this.#hits.set(key, (entry = { times: [], next: 0 }));
    if (entry.times.length < this.#limit) {
      entry.times.push(now);
      return;
    }
    const oldest = entry.times[entry.next]!;
    if (now - oldest < this.#windowMs) {
      const retryAfter = Math.max(1, Math.ceil((oldest + this.#windowMs - now) / 1000));
      throw new ApiError('rate_limited', `more than ${this.#limit} invoice creations per minute on this API key; retry after ${retryAfter} s`, {
        retry_after_seconds: retryAfter,
      });
    }
    entry.times[entry.next] = now;
    entry.next = (entry.next + 1) % this.#limit;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < this.#windowMs) return;
    this.#lastSweep = now;
    for (const [key, entry] of this.#hits) {
      if (Math.max(...entry.times) <= now - this.#windowMs) this.#hits.delete(key);
    }
  }
}
