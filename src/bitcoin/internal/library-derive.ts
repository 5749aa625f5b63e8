// The same receive addresses computed the stock way: a bip32 node per child
// and bitcoinjs-lib payments. Not used to serve requests: it is the baseline
// scripts/bench/derive.ts measures the fast path against, and a second,
// independently written implementation the unit tests compare it with.
import { BIP32Factory } from 'bip32';
import { initEccLib, payments, type Payment } from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';
import type { DerivedAddress } from '../derive.ts';
import type { WatchKey } from '../extended-key.ts';
import { getNetwork, type TillNetwork } from '../networks.ts';
import { decodeBase58Check } from './base58check.ts';

const bip32 = BIP32Factory(ecc);
initEccLib(ecc);

export function deriveWithLibraries(key: WatchKey, network: TillNetwork, fromIndex: number, count: number): DerivedAddress[] {
  const net = getNetwork(network);
  // bip32 only parses a key whose version bytes the network names, so a
  // zpub/vpub needs its own bip32 field.
  const decoded = decodeBase58Check(key.xpub);
  if (!decoded.ok) throw new Error('not a base58check key');
  const version = new DataView(decoded.payload.buffer, decoded.payload.byteOffset).getUint32(0);
  let branch = bip32.fromBase58(key.xpub, { ...net, bip32: { public: version, private: 0 } });
  for (const step of key.receiveBranch) branch = branch.derive(step);
  const out: DerivedAddress[] = [];
  for (let index = fromIndex; index < fromIndex + count; index++) {
    const pubkey = branch.derive(index).publicKey;
    const payment = paymentFor(key, pubkey, network);
    out.push({ index, address: payment.address!, scriptHex: Buffer.from(payment.output!).toString('hex') });
  }
  return out;
}

function paymentFor(key: WatchKey, pubkey: Uint8Array, network: TillNetwork): Payment {
  const net = getNetwork(network);
  switch (key.scriptType) {
    case 'p2pkh':
      return payments.p2pkh({ pubkey, network: net });
    case 'p2wpkh':
      return payments.p2wpkh({ pubkey, network: net });
    case 'p2sh-p2wpkh':
      return payments.p2sh({ redeem: payments.p2wpkh({ pubkey, network: net }), network: net });
    case 'p2tr':
      return payments.p2tr({ internalPubkey: pubkey.subarray(1, 33), network: net });
  }
}
