// BIP86 key-path-only Taproot output key (BIP341 taproot_tweak_pubkey with
// no script tree): Q = lift_x(P) + hash_TapTweak(x(P))·G. Uses the same
// fixed-base multiplication + point addition as child-key.ts, which measured
// faster than tiny-secp256k1's xOnlyPointAddTweak.
import { crypto } from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';

const FIELD_PRIME = 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn;

/** The 32-byte x-only output key for a 65-byte uncompressed internal key. */
export function taprootOutputKey(internalPoint: Uint8Array): Uint8Array {
  const x = internalPoint.subarray(1, 33);
  const tweak = crypto.taggedHash('TapTweak', x);
  const tweaked = ecc.isPrivate(tweak)
    ? ecc.pointAdd(ecc.pointFromScalar(tweak, false)!, liftEvenY(internalPoint), true)
    : null;
  if (tweaked === null) throw new Error('Taproot tweak produced no valid output key');
  return tweaked.subarray(1, 33);
}

/** The point with the same x and an even y (BIP340 lift_x): negate y when it is odd. */
function liftEvenY(point: Uint8Array): Uint8Array {
  if ((point[64]! & 1) === 0) return point;
  const y = BigInt(`0x${Buffer.from(point.subarray(33, 65)).toString('hex')}`);
  const negated = Buffer.from((FIELD_PRIME - y).toString(16).padStart(64, '0'), 'hex');
  const out = new Uint8Array(65);
  out.set(point.subarray(0, 33));
  out.set(negated, 33);
  return out;
}
