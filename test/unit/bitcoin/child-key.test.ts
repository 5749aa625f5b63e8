// BIP32 public child derivation against the published vectors (BIP32
// vectors 1-3, BIP381/382 scripts over non-hardened children).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeExtendedPublicKey } from '../../../src/bitcoin/extended-key.ts';
import {
  childKeyDeriver,
  compressPoint,
  deriveChildPublic,
  hash160,
  type PublicNode,
} from '../../../src/bitcoin/internal/child-key.ts';
import { type Bip32Fixture, loadFixture } from './fixtures.ts';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const fixture = loadFixture<Bip32Fixture>('bip32.json');

describe('deriveChildPublic (BIP32 CKDpub)', () => {
  for (const d of fixture.derivations) {
    test(d.description, () => {
      const parent = decodeExtendedPublicKey(d.parent);
      const child = d.path.reduce<PublicNode>((node, index) => deriveChildPublic(node, index), parent);
      if (d.expect.xpub) {
        const expected = decodeExtendedPublicKey(d.expect.xpub);
        assert.equal(hex(child.publicKey), hex(expected.publicKey));
        assert.equal(hex(child.chainCode), hex(expected.chainCode));
        assert.equal(expected.depth, parent.depth + d.path.length);
        assert.equal(expected.childIndex, d.path.at(-1));
        assert.equal(expected.parentFingerprint, hash160(parent.publicKey).readUInt32BE(0));
      }
      if (d.expect.publicKey) assert.equal(hex(child.publicKey), d.expect.publicKey);
      if (d.expect.hash160) assert.equal(hex(hash160(child.publicKey)), d.expect.hash160);
    });
  }

  test('childKeyDeriver gives the same keys as deriveChildPublic', () => {
    for (const d of fixture.derivations) {
      const parent = decodeExtendedPublicKey(d.parent);
      const last = d.path.at(-1)!;
      const above = d.path.slice(0, -1).reduce<PublicNode>((node, index) => deriveChildPublic(node, index), parent);
      assert.equal(hex(compressPoint(childKeyDeriver(above)(last))), hex(deriveChildPublic(above, last).publicKey));
    }
  });

  test('refuses hardened and malformed indexes', () => {
    const parent = decodeExtendedPublicKey(fixture.derivations[0]!.parent);
    const derive = childKeyDeriver(parent);
    for (const index of [0x80000000, -1, 1.5, Number.NaN]) {
      assert.throws(() => deriveChildPublic(parent, index), RangeError);
      assert.throws(() => derive(index), RangeError);
    }
  });
});
