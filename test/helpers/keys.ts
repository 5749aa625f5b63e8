import { createHash } from 'node:crypto';
import { BIP32Factory } from 'bip32';
import * as ecc from 'tiny-secp256k1';
import * as bitcoin from 'bitcoinjs-lib';

const bip32 = BIP32Factory(ecc);

/** A deterministic testnet/regtest account xpub (tpub) for tests; seed from a label. */
export function testTpub(label = 'till-tests'): string {
  const seed = createHash('sha256').update(label).digest();
  return bip32.fromSeed(seed, bitcoin.networks.testnet).derivePath("m/84'/1'/0'").neutered().toBase58();
}

/** A deterministic mainnet account xpub for tests. */
export function testXpub(label = 'till-tests'): string {
  const seed = createHash('sha256').update(label).digest();
  return bip32.fromSeed(seed, bitcoin.networks.bitcoin).derivePath("m/84'/0'/0'").neutered().toBase58();
}
