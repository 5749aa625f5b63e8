// BIP380 descriptor checksum (https://github.com/bitcoin/bips/blob/master/bip-0380.mediawiki#checksum),
// a transcription of the spec's Python descsum_expand/descsum_polymod/descsum_create.
// The polymod works on 40-bit values, past JavaScript's 32-bit bitwise
// operators, so it runs on BigInt; descriptors are short.

const INPUT_CHARSET =
  '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
export const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(symbols: readonly number[]): bigint {
  let chk = 1n;
  for (const value of symbols) {
    const top = chk >> 35n;
    chk = ((chk & 0x7ffffffffn) << 5n) ^ BigInt(value);
    for (let i = 0; i < 5; i++) {
      if ((top >> BigInt(i)) & 1n) chk ^= GENERATOR[i]!;
    }
  }
  return chk;
}

function expand(text: string): number[] | null {
  const symbols: number[] = [];
  const groups: number[] = [];
  for (const c of text) {
    const v = INPUT_CHARSET.indexOf(c);
    if (v === -1) return null;
    symbols.push(v & 31);
    groups.push(v >> 5);
    if (groups.length === 3) {
      symbols.push(groups[0]! * 9 + groups[1]! * 3 + groups[2]!);
      groups.length = 0;
    }
  }
  if (groups.length === 1) symbols.push(groups[0]!);
  else if (groups.length === 2) symbols.push(groups[0]! * 3 + groups[1]!);
  return symbols;
}

/** The 8-character checksum of a descriptor body (no `#`), or null if it has a character outside BIP380's set. */
export function computeDescriptorChecksum(body: string): string | null {
  const symbols = expand(body);
  if (symbols === null) return null;
  const mod = polymod([...symbols, 0, 0, 0, 0, 0, 0, 0, 0]) ^ 1n;
  let out = '';
  for (let i = 0; i < 8; i++) out += CHECKSUM_CHARSET[Number((mod >> BigInt(5 * (7 - i))) & 31n)];
  return out;
}
