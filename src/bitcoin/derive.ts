// Receive addresses of a watch key: address i is the script of KEY/0/i
// (BIP32 non-hardened), encoded for the Till's configured chain.
import { address } from 'bitcoinjs-lib';
import { decodeExtendedPublicKey, type ScriptType, type WatchKey } from './extended-key.ts';
import {
  childKeyDeriver,
  compressPoint,
  deriveChildPublic,
  hash160,
  MAX_NON_HARDENED_INDEX,
  type ChildKeyDeriver,
  type PublicNode,
} from './internal/child-key.ts';
import { taprootOutputKey } from './internal/taproot.ts';
import { getNetwork, type TillNetwork } from './networks.ts';
import { setBounded } from '../set-bounded.ts';

/** A key's last receive address: BIP32 non-hardened indexes end at 2^31 - 1. */
export const LAST_RECEIVE_INDEX = MAX_NON_HARDENED_INDEX;

export interface DerivedAddress {
  index: number;
  address: string;
  /** scriptPubKey, lower-case hex: what the chain watcher matches outputs against. */
  scriptHex: string;
}

interface Output {
  script: Buffer;
  address: string;
}

// Derivers for branch nodes (KEY/0) by key, so each address costs one child
// derivation. Public data only; bounded because keys come and go with stores.
const BRANCH_CACHE_SIZE = 64;
const branchCache = new Map<string, ChildKeyDeriver>();

export function deriveReceiveAddresses(
  key: WatchKey,
  network: TillNetwork,
  fromIndex: number,
  count: number,
): DerivedAddress[] {
  if (!Number.isInteger(fromIndex) || fromIndex < 0 || fromIndex > MAX_NON_HARDENED_INDEX) {
    throw new RangeError(`fromIndex must be an integer in 0..${MAX_NON_HARDENED_INDEX}, got ${fromIndex}`);
  }
  if (!Number.isInteger(count) || count < 0 || fromIndex + count - 1 > MAX_NON_HARDENED_INDEX) {
    throw new RangeError(`count must be an integer >= 0 that keeps the last index within ${MAX_NON_HARDENED_INDEX}, got ${count}`);
  }
  const deriveChild = receiveBranchOf(key);
  const out: DerivedAddress[] = [];
  for (let index = fromIndex; index < fromIndex + count; index++) {
    const output = outputFor(key.scriptType, deriveChild(index), network);
    out.push({ index, address: output.address, scriptHex: output.script.toString('hex') });
  }
  return out;
}

function receiveBranchOf(key: WatchKey): ChildKeyDeriver {
  const cacheKey = `${key.xpub}/${key.receiveBranch.join('/')}`;
  const cached = branchCache.get(cacheKey);
  if (cached) {
    // Re-insert to keep the map in least-recently-used order.
    branchCache.delete(cacheKey);
    branchCache.set(cacheKey, cached);
    return cached;
  }
  let node: PublicNode = decodeExtendedPublicKey(key.xpub);
  for (const step of key.receiveBranch) node = deriveChildPublic(node, step);
  const deriver = childKeyDeriver(node);
  setBounded(branchCache, cacheKey, deriver, BRANCH_CACHE_SIZE);
  return deriver;
}

/** The output for a child key given as a 65-byte uncompressed point. */
function outputFor(scriptType: ScriptType, point: Uint8Array, network: TillNetwork): Output {
  const net = getNetwork(network);
  switch (scriptType) {
    // The hash-based types commit to the compressed key (BIP143: segwit v0 requires it).
    case 'p2pkh': {
      const hash = hash160(compressPoint(point));
      // OP_DUP OP_HASH160 <20> OP_EQUALVERIFY OP_CHECKSIG
      return {
        script: Buffer.concat([Buffer.from([0x76, 0xa9, 0x14]), hash, Buffer.from([0x88, 0xac])]),
        address: address.toBase58Check(hash, net.pubKeyHash),
      };
    }
    case 'p2sh-p2wpkh': {
      // The redeem script is the P2WPKH program; P2SH commits to its hash.
      const redeem = Buffer.concat([Buffer.from([0x00, 0x14]), hash160(compressPoint(point))]);
      const hash = hash160(redeem);
      return {
        script: Buffer.concat([Buffer.from([0xa9, 0x14]), hash, Buffer.from([0x87])]),
        address: address.toBase58Check(hash, net.scriptHash),
      };
    }
    case 'p2wpkh': {
      const hash = hash160(compressPoint(point));
      return {
        script: Buffer.concat([Buffer.from([0x00, 0x14]), hash]),
        address: address.toBech32(hash, 0, net.bech32),
      };
    }
    case 'p2tr': {
      const program = Buffer.from(taprootOutputKey(point));
      return {
        script: Buffer.concat([Buffer.from([0x51, 0x20]), program]),
        address: address.toBech32(program, 1, net.bech32),
      };
    }
  }
}
