// The one source of time. Production uses the system clock; tests build a
// ManualClock and move it, so expiry, retries and rate staleness are testable
// without waiting.
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class ManualClock implements Clock {
  #now: number;
  constructor(start: number | string = '2026-11-21T10:00:00.000Z') {
    this.#now = typeof start === 'number' ? start : Date.parse(start);
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(ms: number): void {
    this.#now = ms;
  }
}

// The last two times formatted: a creation formats its own time twice and its
// expiry once, a batch's creations share their millisecond, and so do a busy
// turn's request log lines (~1.5 % of the loop under the creation load,
// formatted afresh each time).
let lastMs = NaN;
let lastIso = '';
let otherMs = NaN;
let otherIso = '';

export function toIso(ms: number): string {
  if (ms === lastMs) return lastIso;
  if (ms === otherMs) return otherIso;
  const iso = new Date(ms).toISOString();
  [otherMs, otherIso, lastMs, lastIso] = [lastMs, lastIso, ms, iso];
  return iso;
}

export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : toIso(ms);
}
