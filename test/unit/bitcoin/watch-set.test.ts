import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { payments } from 'bitcoinjs-lib';
import { scriptFingerprint, WatchSet } from '../../../src/bitcoin/watch-set.ts';

// The watch set keys on 8 bytes from inside each standard script's hash or
// key. The start-up rebuild hands it the stored hex, a transaction's outputs
// hand it bytes: both forms must give the same fingerprint, or a payment to a
// watched address would go unseen.

const hash20 = Buffer.from('00112233445566778899aabbccddeeff01234567', 'hex');
const hash32 = Buffer.from('f0e1d2c3b4a5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff', 'hex');
const key33 = Buffer.from('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex');

/** A different 20-byte hash for each script, so no two valid cases share a fingerprint. */
const hashN = (n: number) => Buffer.from(hash20.map((b) => b ^ n));

const valid = [
  { description: 'p2pkh', script: payments.p2pkh({ hash: hashN(1) }).output! },
  { description: 'p2sh', script: payments.p2sh({ hash: hashN(2) }).output! },
  { description: 'p2wpkh', script: payments.p2wpkh({ hash: hashN(3) }).output! },
  { description: 'p2wsh', script: payments.p2wsh({ hash: hash32 }).output! },
  // OP_1 <32-byte key>: built by hand, as bitcoinjs' p2tr wants an elliptic-curve library to check the key.
  { description: 'p2tr', script: Buffer.concat([Buffer.from([0x51, 0x20]), hash32.map((b) => b ^ 0x5a)]) },
];

const invalid = [
  { description: 'p2pk (35 bytes: not a hash or x-only key form)', hex: Buffer.from(payments.p2pk({ pubkey: key33 }).output!).toString('hex') },
  { description: 'OP_RETURN data', hex: Buffer.from(payments.embed({ data: [hash20.subarray(0, 4)] }).output!).toString('hex') },
  { description: 'empty', hex: '' },
  { description: 'odd number of hex digits', hex: '0014' + '0'.repeat(39) },
  { description: 'not hex where the fingerprint is read', hex: '0014' + 'zz'.repeat(20) },
  { description: 'a sign inside the fingerprint', hex: '001400' + '-1234567' + '0'.repeat(26) },
];

describe('scriptFingerprint', () => {
  for (const v of valid) {
    test(`${v.description}: the bytes and their hex (either case) give the same fingerprint`, () => {
      const hex = Buffer.from(v.script).toString('hex');
      const fp = scriptFingerprint(v.script);
      assert.ok(fp, 'standard scripts have one');
      assert.deepEqual(scriptFingerprint(hex), fp);
      assert.deepEqual(scriptFingerprint(hex.toUpperCase()), fp);
    });
  }
  for (const v of invalid) {
    test(`${v.description}: none`, () => {
      assert.equal(scriptFingerprint(v.hex), null);
      if (/^([0-9a-f]{2})*$/.test(v.hex)) assert.equal(scriptFingerprint(Buffer.from(v.hex, 'hex')), null);
    });
  }
});

describe('WatchSet', () => {
  test('a script added as hex is found by its bytes, and deleted by either form', () => {
    const set = new WatchSet();
    valid.forEach((v, i) => set.add(Buffer.from(v.script).toString('hex'), i + 1));
    assert.equal(set.size, valid.length);
    valid.forEach((v, i) => assert.deepEqual(set.candidates(v.script), [i + 1], v.description));
    set.delete(valid[0]!.script, 1);
    set.delete(Buffer.from(valid[1]!.script).toString('hex'), 2);
    assert.deepEqual([set.size, set.candidates(valid[0]!.script), set.candidates(valid[1]!.script)], [valid.length - 2, [], []]);
    // Adding the same script and rowid twice keeps one entry.
    set.add(valid[2]!.script, 3);
    assert.equal(set.size, valid.length - 2);
  });

  test('two invoices of one script are both candidates; growing keeps every entry', () => {
    const set = new WatchSet(1);
    // The number up front, where the fingerprint reads: 5,000 distinct ones.
    const p2wpkh = (i: number) => payments.p2wpkh({ hash: Buffer.from(i.toString(16).padStart(8, '0').padEnd(40, 'a'), 'hex') }).output!;
    for (let i = 1; i <= 5000; i++) assert.equal(set.add(Buffer.from(p2wpkh(i)).toString('hex'), i), 0, 'nothing else watched under it');
    assert.equal(set.add(p2wpkh(7), 90_001), 7, 'the other invoice watched under the same script');
    assert.equal(set.add(p2wpkh(7), 90_001), 0, 'added again: nothing new to say');
    assert.equal(set.size, 5001);
    assert.deepEqual(set.candidates(p2wpkh(7)).sort((a, b) => a - b), [7, 90_001]);
    for (let i = 1; i <= 5000; i++) assert.deepEqual(set.candidates(p2wpkh(i)), i === 7 ? [7, 90_001] : [i]);
    assert.deepEqual(set.candidates(p2wpkh(5001)), []);
  });
});
