// Spots private key material anywhere in a pasted string, before any other
// parsing, so a secret is refused as a secret even when the rest of the input
// is malformed (a typo'd xprv is still a private key). The result names the
// kind of secret, never its text.
import { BASE58_ALPHABET, decodeBase58Check } from './base58check.ts';
import { findKeyVersion, PRIVATE_KEY_PREFIXES } from './key-versions.ts';

const NON_BASE58 = new RegExp(`[^${BASE58_ALPHABET}]+`);
// WIF: 51 characters starting 5 (mainnet) or 9 (testnet) for uncompressed
// keys, 52 starting K/L (mainnet) or c (testnet) for compressed ones.
const WIF_SHAPE = new RegExp(`^(?:[59][${BASE58_ALPHABET}]{50}|[KLc][${BASE58_ALPHABET}]{51})$`);
const WIF_VERSIONS = new Set([0x80, 0xef]);
const SEED_PHRASE = /^[a-z]+(?:\s+[a-z]+){11,}$/;

/** A description such as "an extended private key (xprv)", or null if no private key is found. */
export function findPrivateKey(input: string): string | null {
  if (SEED_PHRASE.test(input.trim())) return 'a seed phrase (recovery words)';
  for (const token of input.split(NON_BASE58)) {
    const found = classifyToken(token);
    if (found !== null) return found;
  }
  return null;
}

function classifyToken(token: string): string | null {
  if (token.length < 50) return null;
  const prefix = token.slice(0, 4);
  if (token.length >= 100 && PRIVATE_KEY_PREFIXES.includes(prefix)) {
    return `an extended private key (${prefix})`;
  }
  const decoded = decodeBase58Check(token);
  if (decoded.ok) {
    const { payload } = decoded;
    if (payload.length === 78) {
      const version = findKeyVersion(new DataView(payload.buffer, payload.byteOffset).getUint32(0));
      if (version?.isPrivate) return `an extended private key (${version.prefix})`;
      // Key data starting 0x00 is a private scalar whatever the version says.
      if (payload[45] === 0x00) return 'an extended key carrying private key data';
    }
    const isWif =
      WIF_VERSIONS.has(payload[0] ?? -1) &&
      (payload.length === 33 || (payload.length === 34 && payload[33] === 0x01));
    if (isWif) return 'a WIF private key';
  }
  if (WIF_SHAPE.test(token)) return 'a WIF private key';
  return null;
}
