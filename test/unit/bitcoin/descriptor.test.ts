// BIP380 checksum against published values (BIP380, Bitcoin Core), and the
// descriptor parser's view of what Till watches.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addDescriptorChecksum, parseDescriptor } from '../../../src/bitcoin/descriptor.ts';
import { computeDescriptorChecksum } from '../../../src/bitcoin/internal/descriptor-checksum.ts';
import { type DescriptorFixture, loadFixture } from './fixtures.ts';

const fixture = loadFixture<DescriptorFixture>('descriptors.json');

describe('BIP380 descriptor checksum', () => {
  for (const c of fixture.checksums) {
    test(`${c.source}: #${c.checksum}`, () => {
      assert.equal(computeDescriptorChecksum(c.body), c.checksum);
      assert.equal(addDescriptorChecksum(c.body), `${c.body}#${c.checksum}`);
    });
  }

  test('a character outside the BIP380 set has no checksum', () => {
    assert.equal(computeDescriptorChecksum('raw(Ü)'), null);
  });

  test('any single-character change is caught', () => {
    const { body, checksum } = fixture.checksums[1]!;
    for (let i = 0; i < body.length; i++) {
      const altered = `${body.slice(0, i)}${body[i] === 'a' ? 'b' : 'a'}${body.slice(i + 1)}`;
      assert.notEqual(computeDescriptorChecksum(altered), checksum, `change at ${i}`);
    }
  });
});

describe('parseDescriptor', () => {
  test('normalized form re-checksums to what Bitcoin Core prints', () => {
    const { body, checksum } = fixture.checksums[1]!;
    const parsed = parseDescriptor(`${body}#${checksum}`);
    assert.equal(parsed.normalized, body);
    assert.equal(addDescriptorChecksum(parsed.normalized), `${body}#${checksum}`);
  });

  test('the script type comes from the wrapper', () => {
    const key =
      'xpub6DJ2dNUysrn5Vt36jH2KLBT2i1auw1tTSSomg8PhqNiUtx8QX2SvC9nrHu81fT41fvDUnhMjEzQgXnQjKEu3oaqMSzhSrHMxyyoEAmUHQbY';
    assert.equal(parseDescriptor(`pkh(${key}/0/*)`).scriptType, 'p2pkh');
    assert.equal(parseDescriptor(`wpkh(${key}/0/*)`).scriptType, 'p2wpkh');
    assert.equal(parseDescriptor(`sh(wpkh(${key}/0/*))`).scriptType, 'p2sh-p2wpkh');
    assert.equal(parseDescriptor(`tr(${key}/0/*)`).scriptType, 'p2tr');
  });
});
