import { randomBytes, randomInt } from 'node:crypto';

// Prefixed, time-sortable identifiers: prefix + 10 chars of millisecond time +
// 16 chars (80 bits) of randomness, Crockford base32 in lower case. The random
// part makes ids unguessable (invoice ids are public capability URLs).
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix = 'inv' | 'sto' | 'evt' | 'we' | 'dlv' | 'key' | 'xpb' | 'ven' | 'pay';

// Random bytes are drawn 4 KiB at a time: one call per ~400 ids, not one each.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

function randomTen(): Buffer {
  if (offset + 10 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  offset += 10;
  return pool.subarray(offset - 10, offset);
}

/** The 26 characters of an id's body, written in place: built a character at a time, each id was ~1 KB of short-lived strings. */
const body = Buffer.alloc(26);
const CODES = Buffer.from(ALPHABET, 'latin1');

export function newId(prefix: IdPrefix, nowMs: number): string {
  let t = Math.floor(nowMs);
  for (let i = 9; i >= 0; i--) {
    body[i] = CODES[t % 32]!;
    t = Math.floor(t / 32);
  }
  const rnd = randomTen();
  // 80 bits -> 16 base32 chars, 5 bits at a time.
  let at = 10;
  let acc = 0;
  let bits = 0;
  for (const byte of rnd) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      body[at++] = CODES[(acc >> (bits - 5)) & 31]!;
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${body.toString('latin1', 0, 26)}`;
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(prefix + '_') && ID_BODY.test(value.slice(prefix.length + 1));
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform random base62 text (randomInt rejects biased draws): API keys and webhook secrets. */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}
