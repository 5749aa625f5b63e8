// A seeded random source for generated tests (the chain soak, the API fuzz test, the state machine property test).

/** mulberry32: small, fast, and the same sequence on every platform. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0 || 1;
  }
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(a: number, b: number): number {
    return a + Math.floor(this.next() * (b - a + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  weighted<T extends string>(w: Partial<Record<T, number>>): T {
    const entries = (Object.entries(w) as Array<[T, number]>).filter(([, v]) => v > 0);
    let r = this.next() * entries.reduce((s, [, v]) => s + v, 0);
    for (const [k, v] of entries) if ((r -= v) < 0) return k;
    return entries.at(-1)![0];
  }
}
