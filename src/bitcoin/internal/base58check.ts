// Base58Check decoding (BIP32 serialization, WIF). Written out here rather
// than taken from a transitive dependency so that a failure can say *why*
// (bad character, wrong length, checksum) without echoing the input.
import { createHash } from 'node:crypto';

export const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

const DIGITS = new Map([...BASE58_ALPHABET].map((c, i) => [c, BigInt(i)]));

export type Base58CheckResult =
  | { ok: true; payload: Uint8Array }
  | { ok: false; reason: 'characters' | 'checksum' | 'too_short' };

export function decodeBase58Check(text: string): Base58CheckResult {
  let value = 0n;
  for (const c of text) {
    const digit = DIGITS.get(c);
    if (digit === undefined) return { ok: false, reason: 'characters' };
    value = value * 58n + digit;
  }
  const hex = value === 0n ? '' : value.toString(16);
  const body = Buffer.from(hex.length % 2 === 1 ? `0${hex}` : hex, 'hex');
  const leadingZeros = text.length - text.replace(/^1+/, '').length;
  const bytes = Buffer.concat([Buffer.alloc(leadingZeros), body]);
  if (bytes.length < 5) return { ok: false, reason: 'too_short' };
  const payload = bytes.subarray(0, bytes.length - 4);
  const checksum = sha256(sha256(payload)).subarray(0, 4);
  if (!checksum.equals(bytes.subarray(bytes.length - 4))) return { ok: false, reason: 'checksum' };
  return { ok: true, payload: new Uint8Array(payload) };
}

function sha256(data: Uint8Array): Buffer {
  return createHash('sha256').update(data).digest();
}
