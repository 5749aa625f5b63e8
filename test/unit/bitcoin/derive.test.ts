// Receive-address derivation beyond the vectors: agreement with the stock
// bip32 + bitcoinjs-lib path over many indexes, batching, cache, bounds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { BIP32Factory } from 'bip32';
import * as ecc from 'tiny-secp256k1';
import { deriveReceiveAddresses } from '../../../src/bitcoin/derive.ts';
import { parseWatchKey, type WatchKey } from '../../../src/bitcoin/extended-key.ts';
import { deriveWithLibraries } from '../../../src/bitcoin/internal/library-derive.ts';
import { TILL_NETWORKS } from '../../../src/bitcoin/networks.ts';

const ZPUB =
  'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs';
const XPUB =
  'xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ';
const UPUB =
  'upub5EFU65HtV5TeiSHmZZm7FUffBGy8UKeqp7vw43jYbvZPpoVsgU93oac7Wk3u6moKegAEWtGNF8DehrnHtv21XXEMYRUocHqguyjknFHYfgY';
const loose = { requireNetworkMatch: false };
const MAX = 2 ** 31 - 1;

const keys: Record<string, WatchKey> = {
  p2pkh: parseWatchKey(XPUB, 'main', loose),
  'p2sh-p2wpkh': parseWatchKey(UPUB, 'main', loose),
  p2wpkh: parseWatchKey(ZPUB, 'main', loose),
  p2tr: parseWatchKey(`tr(${XPUB}/0/*)`, 'main', loose),
};

describe('deriveReceiveAddresses', () => {
  for (const [scriptType, key] of Object.entries(keys)) {
    test(`${scriptType}: matches bip32 + bitcoinjs-lib payments on every network`, () => {
      for (const network of TILL_NETWORKS) {
        for (const from of [0, 1_000_000, MAX - 24]) {
          assert.deepEqual(deriveReceiveAddresses(key, network, from, 25), deriveWithLibraries(key, network, from, 25));
        }
      }
    });
  }

  test('one batch equals the same range in pieces', () => {
    const whole = deriveReceiveAddresses(keys.p2wpkh!, 'main', 10, 12);
    const pieces = [
      ...deriveReceiveAddresses(keys.p2wpkh!, 'main', 10, 5),
      ...deriveReceiveAddresses(keys.p2wpkh!, 'main', 15, 1),
      ...deriveReceiveAddresses(keys.p2wpkh!, 'main', 16, 6),
    ];
    assert.deepEqual(pieces, whole);
    assert.deepEqual(whole.map((a) => a.index), [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]);
    assert.equal(new Set(whole.map((a) => a.address)).size, 12);
  });

  test('stays correct for earlier keys after more keys than the cache holds', () => {
    const bip32 = BIP32Factory(ecc);
    const first = deriveReceiveAddresses(keys.p2wpkh!, 'regtest', 0, 3);
    for (let i = 0; i < 80; i++) {
      const xpub = bip32.fromSeed(randomBytes(32)).neutered().toBase58();
      const key = parseWatchKey(`wpkh(${xpub}/0/*)`, 'main', loose);
      assert.deepEqual(deriveReceiveAddresses(key, 'main', 7, 2), deriveWithLibraries(key, 'main', 7, 2));
    }
    assert.deepEqual(deriveReceiveAddresses(keys.p2wpkh!, 'regtest', 0, 3), first);
  });

  test('count 0 gives no addresses; the last non-hardened index is allowed', () => {
    assert.deepEqual(deriveReceiveAddresses(keys.p2wpkh!, 'main', 5, 0), []);
    assert.deepEqual(deriveReceiveAddresses(keys.p2wpkh!, 'main', MAX, 0), []);
    assert.equal(deriveReceiveAddresses(keys.p2wpkh!, 'main', MAX, 1)[0]!.index, MAX);
  });

  test('refuses indexes outside 0..2^31-1', () => {
    const key = keys.p2wpkh!;
    for (const [from, count] of [
      [-1, 1],
      [MAX + 1, 1],
      [1.5, 1],
      [Number.NaN, 1],
      [MAX, 2],
      [MAX - 9, 11],
      [0, -1],
      [0, 2.5],
    ] as const) {
      assert.throws(() => deriveReceiveAddresses(key, 'main', from, count), RangeError, `${from}, ${count}`);
    }
  });
});
