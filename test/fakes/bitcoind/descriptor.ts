// Output descriptors, as far as a watcher uses them: the checksum (BIP380),
// InferDescriptor for scripts Core describes without keys, and parsing of
// the `addr()` and `raw()` scan objects that scantxoutset accepts.
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from 'tiny-secp256k1';
import { NETWORK, toHex } from './consensus.ts';
import { RpcError, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, typeMismatch } from './rpc-error.ts';

const INPUT_CHARSET = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(chk: bigint, value: number): bigint {
  const top = chk >> 35n;
  chk = ((chk & 0x7ffffffffn) << 5n) ^ BigInt(value);
  for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) chk ^= GENERATOR[i]!;
  return chk;
}

/** The 8-character checksum of a descriptor body, or null if it has characters outside the charset. */
export function descriptorChecksum(body: string): string | null {
  let chk = 1n;
  let groups: number[] = [];
  for (const ch of body) {
    const pos = INPUT_CHARSET.indexOf(ch);
    if (pos < 0) return null;
    chk = polymod(chk, pos & 31);
    groups.push(pos >> 5);
    if (groups.length === 3) {
      chk = polymod(chk, groups[0]! * 9 + groups[1]! * 3 + groups[2]!);
      groups = [];
    }
  }
  if (groups.length === 1) chk = polymod(chk, groups[0]!);
  if (groups.length === 2) chk = polymod(chk, groups[0]! * 3 + groups[1]!);
  for (let i = 0; i < 8; i++) chk = polymod(chk, 0);
  chk ^= 1n;
  let out = '';
  for (let i = 0; i < 8; i++) out += CHECKSUM_CHARSET[Number((chk >> BigInt(5 * (7 - i))) & 31n)];
  return out;
}

function withChecksum(body: string): string {
  return `${body}#${descriptorChecksum(body)}`;
}

/** Address of a script as ExtractDestination sees it; undefined for P2PK, OP_RETURN and non-standard scripts. */
export function scriptAddress(script: Uint8Array): string | undefined {
  try {
    return bitcoin.address.fromOutputScript(script, NETWORK);
  } catch {
    return undefined;
  }
}

/** A bare public key script (`<33|65-byte key> OP_CHECKSIG`): the key, else undefined. */
export function payToPubkeyKey(script: Uint8Array): Uint8Array | undefined {
  const n = script.length - 2;
  if ((n === 33 || n === 65) && script[0] === n && script[script.length - 1] === bitcoin.opcodes.OP_CHECKSIG) {
    const key = script.subarray(1, 1 + n);
    if (ecc.isPoint(key)) return key;
  }
  return undefined;
}

/** InferDescriptor(script, no keys known): pk() for P2PK, rawtr() for P2TR, addr() for other addresses, else raw(). */
export function inferDescriptor(script: Uint8Array): string {
  const pubkey = payToPubkeyKey(script);
  if (pubkey) return withChecksum(`pk(${toHex(pubkey)})`);
  if (script.length === 34 && script[0] === bitcoin.opcodes.OP_1 && script[1] === 32 && ecc.isXOnlyPoint(script.subarray(2))) {
    return withChecksum(`rawtr(${toHex(script.subarray(2))})`);
  }
  const address = scriptAddress(script);
  return withChecksum(address ? `addr(${address})` : `raw(${toHex(script)})`);
}

/** Splits and checks an optional `#checksum`; errors carry Core's messages. */
function stripChecksum(descriptor: string): string {
  const parts = descriptor.split('#');
  if (parts.length > 2) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, "Multiple '#' symbols");
  const [body, given] = parts as [string, string | undefined];
  if (given === undefined) return body;
  if (given.length !== 8) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `Expected 8 character checksum, not ${given.length} characters`);
  const computed = descriptorChecksum(body);
  if (computed === null) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Invalid characters in payload');
  if (computed !== given) {
    throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `Provided checksum '${given}' does not match computed checksum '${computed}'`);
  }
  return body;
}

/**
 * The output script a scantxoutset scan object stands for: a descriptor
 * string or `{desc, range}`. Only `addr()` and `raw()` are understood (the
 * fake's one deviation here); other functions answer -5.
 */
export function scanObjectScript(scanObject: unknown): Uint8Array {
  let descriptor: unknown = scanObject;
  if (typeof scanObject === 'object' && scanObject !== null && !Array.isArray(scanObject)) {
    descriptor = (scanObject as { desc?: unknown }).desc;
    if (descriptor === undefined || descriptor === null) throw new RpcError(RPC_INVALID_PARAMETER, 'Descriptor needs to be provided in scan object');
  } else if (typeof scanObject !== 'string') {
    throw new RpcError(RPC_INVALID_PARAMETER, 'Scan object needs to be either a string or an object');
  }
  if (typeof descriptor !== 'string') throw typeMismatch(descriptor, 'string');
  const body = stripChecksum(descriptor);
  const match = /^([a-z]+)\((.*)\)$/.exec(body);
  const fn = match?.[1] ?? body;
  const arg = match?.[2] ?? '';
  if (fn === 'addr') {
    try {
      return bitcoin.address.toOutputScript(arg, NETWORK);
    } catch {
      throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Address is not valid');
    }
  }
  if (fn === 'raw') {
    if (!/^([0-9a-fA-F]{2})*$/.test(arg)) throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, 'Raw script is not hex');
    return Buffer.from(arg, 'hex');
  }
  throw new RpcError(RPC_INVALID_ADDRESS_OR_KEY, `fake bitcoind: only addr() and raw() descriptors are supported, not '${fn}'`);
}
