// The set of watched output scripts, looked up once per transaction output.
// A JS Map of hex strings costs ~200 bytes an entry; this table stores a
// 64-bit fingerprint (two uint32) and the invoice's rowid (int32) per slot in
// typed arrays, under 30 bytes an address at the default load. The
// fingerprint is 8 bytes from inside the script's hash or key, which is
// already uniformly random for every standard script type; a hit is
// confirmed against the invoice's full script in SQLite, so a collision can
// cost a lookup, never a wrong payment.

const EMPTY = 0;
const TOMBSTONE = -1;
const MAX_LOAD = 0.5;

/** A script's bytes, or its hex as stored (hex skips a Buffer per script when a million are read at start). */
export type ScriptLike = Uint8Array | string;

const STANDARD_LENGTHS = new Set([22, 23, 25, 34]);
const HEX_WORD = /^[0-9a-fA-F]{8}$/;

/** Standard scripts whose program is a hash or key: p2pkh, p2sh, p2wpkh, p2wsh, p2tr. */
export function scriptFingerprint(script: ScriptLike): [number, number] | null {
  if (typeof script === 'string') return hexFingerprint(script);
  if (!STANDARD_LENGTHS.has(script.length)) return null;
  // Bytes 3..10 lie inside the 20- or 32-byte payload of each of these forms.
  const hi = ((script[3]! << 24) | (script[4]! << 16) | (script[5]! << 8) | script[6]!) >>> 0;
  const lo = ((script[7]! << 24) | (script[8]! << 16) | (script[9]! << 8) | script[10]!) >>> 0;
  return [hi, lo];
}

/** The same bytes 3..10, read from the script's hex: characters 6..21. */
function hexFingerprint(hex: string): [number, number] | null {
  if (hex.length % 2 !== 0 || !STANDARD_LENGTHS.has(hex.length / 2)) return null;
  const hi = hex.slice(6, 14);
  const lo = hex.slice(14, 22);
  if (!HEX_WORD.test(hi) || !HEX_WORD.test(lo)) return null;
  return [parseInt(hi, 16), parseInt(lo, 16)];
}

export class WatchSet {
  #hi: Uint32Array;
  #lo: Uint32Array;
  /** Invoice rowid, or EMPTY / TOMBSTONE. */
  #val: Int32Array;
  #size = 0;
  #used = 0;

  constructor(expected = 1024) {
    const cap = WatchSet.#capacityFor(expected);
    this.#hi = new Uint32Array(cap);
    this.#lo = new Uint32Array(cap);
    this.#val = new Int32Array(cap);
  }

  static #capacityFor(n: number): number {
    let cap = 1024;
    while (cap * MAX_LOAD < n) cap *= 2;
    return cap;
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes held by the table. */
  get bytes(): number {
    return this.#hi.byteLength + this.#lo.byteLength + this.#val.byteLength;
  }

  #slot(hi: number, lo: number): number {
    // Multiplicative mix of both halves; capacity is a power of two.
    return (Math.imul(hi ^ Math.imul(lo, 0x9e3779b1), 0x85ebca6b) >>> 0) & (this.#val.length - 1);
  }

  /**
   * Watches the script for the invoice. Returns another invoice's rowid
   * watched under the same fingerprint when this one is new (0 if none): one
   * address handed out twice, which nothing else would show (confirm against
   * the stored scripts: a fingerprint may collide).
   */
  add(script: ScriptLike, rowid: number): number {
    const fp = scriptFingerprint(script);
    if (!fp || rowid <= 0) return 0;
    if ((this.#used + 1) > this.#val.length * MAX_LOAD) this.#resize(this.#size + 1);
    const [hi, lo] = fp;
    const mask = this.#val.length - 1;
    let i = this.#slot(hi, lo);
    let firstFree = -1;
    let other = 0;
    for (;;) {
      const v = this.#val[i]!;
      if (v === EMPTY) break;
      if (v === TOMBSTONE) {
        if (firstFree < 0) firstFree = i;
      } else if (this.#hi[i] === hi && this.#lo[i] === lo) {
        if (v === rowid) return 0;
        other ||= v;
      }
      i = (i + 1) & mask;
    }
    const at = firstFree >= 0 ? firstFree : i;
    if (firstFree < 0) this.#used++;
    this.#hi[at] = hi;
    this.#lo[at] = lo;
    this.#val[at] = rowid;
    this.#size++;
    return other;
  }

  delete(script: ScriptLike, rowid: number): void {
    const fp = scriptFingerprint(script);
    if (!fp) return;
    const [hi, lo] = fp;
    const mask = this.#val.length - 1;
    for (let i = this.#slot(hi, lo); this.#val[i] !== EMPTY; i = (i + 1) & mask) {
      if (this.#val[i] === rowid && this.#hi[i] === hi && this.#lo[i] === lo) {
        this.#val[i] = TOMBSTONE;
        this.#size--;
        return;
      }
    }
  }

  /** Rowids of invoices whose script may be this one (confirm against the stored script). */
  candidates(script: ScriptLike): number[] {
    const fp = scriptFingerprint(script);
    if (!fp) return [];
    const [hi, lo] = fp;
    const mask = this.#val.length - 1;
    const out: number[] = [];
    for (let i = this.#slot(hi, lo); this.#val[i] !== EMPTY; i = (i + 1) & mask) {
      const v = this.#val[i]!;
      if (v > 0 && this.#hi[i] === hi && this.#lo[i] === lo) out.push(v);
    }
    return out;
  }

  #resize(need: number): void {
    const old = { hi: this.#hi, lo: this.#lo, val: this.#val };
    const cap = WatchSet.#capacityFor(need * 2);
    this.#hi = new Uint32Array(cap);
    this.#lo = new Uint32Array(cap);
    this.#val = new Int32Array(cap);
    this.#size = 0;
    this.#used = 0;
    const mask = cap - 1;
    for (let j = 0; j < old.val.length; j++) {
      const v = old.val[j]!;
      if (v <= 0) continue;
      let i = this.#slot(old.hi[j]!, old.lo[j]!);
      while (this.#val[i] !== EMPTY) i = (i + 1) & mask;
      this.#hi[i] = old.hi[j]!;
      this.#lo[i] = old.lo[j]!;
      this.#val[i] = v;
      this.#size++;
      this.#used++;
    }
  }
}
