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

export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

export function toIsoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : toIso(ms);
}
