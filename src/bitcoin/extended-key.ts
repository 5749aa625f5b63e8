// Parsing what a merchant pastes as their wallet's watch key: an extended
// public key (xpub/ypub/zpub, tpub/upub/vpub) or a single-key output
// descriptor. Every refusal is a validation_error on the `xpub` field whose
// message never repeats the input: what was pasted may be a secret.
import * as ecc from 'tiny-secp256k1';
import { invalidField } from '../domain/errors.ts';
import { parseDescriptor } from './descriptor.ts';
import { decodeBase58Check } from './internal/base58check.ts';
import { findKeyVersion, type KeyVersion, type ScriptType } from './internal/key-versions.ts';
import { findPrivateKey } from './internal/private-key.ts';
import { describeNetwork, keyNetworkOf, type KeyNetwork, type TillNetwork } from './networks.ts';

export type { ScriptType } from './internal/key-versions.ts';

/**
 * A parsed watch key: everything needed to derive and to display receive
 * addresses, and nothing secret. Plain data, safe to store and log.
 */
export interface WatchKey {
  /** What was pasted: a bare extended key or an output descriptor. */
  kind: 'xpub' | 'descriptor';
  /** From the version bytes for a bare key (xpub p2pkh, ypub p2sh-p2wpkh, zpub p2wpkh); from the wrapper for a descriptor. */
  scriptType: ScriptType;
  /** The chain family the key's version bytes name (tpub/upub/vpub are 'test'). */
  keyNetwork: KeyNetwork;
  /**
   * Canonical text to store and compare: the extended key as given for
   * kind 'xpub'; for a descriptor, the receive descriptor Till watches,
   * without checksum, hardened steps written h (e.g.
   * `wpkh([d34db33f/84h/0h/0h]xpub.../0/*)`). Re-parsing it gives the same key.
   */
  normalized: string;
  /** The bare extended public key (base58, as given), the root of derivation. */
  xpub: string;
  /** Master key fingerprint from a descriptor's key origin (lower-case hex), else null. */
  fingerprint: string | null;
  /** Key origin path below the master, e.g. "84h/0h/0h"; "" for `[fingerprint]` alone; null without origin. */
  originPath: string | null;
  /** Fingerprint of the key's parent as serialized in the key (8 hex chars; 00000000 for a master key). */
  parentFingerprint: string;
  /** Depth as serialized in the key (3 for a BIP44/49/84/86 account key). */
  depth: number;
  /** Non-hardened path from the key to the receive branch: [0], so address i is KEY/0/i. */
  receiveBranch: readonly number[];
  /**
   * What the addresses derive from: script type, the key itself (not its
   * version bytes, origin or wrapper) and the receive branch. Two texts with
   * one identity (`tpub…` and `pkh(tpub…)`) give the same addresses.
   */
  identity: string;
}

export interface ParseWatchKeyOptions {
  /**
   * Live stores pass true: the key must be of the configured chain. Test
   * stores pass false, so a mainnet xpub can drive a regtest or testnet
   * Till (and the reverse): their invoices are settled by the simulate
   * endpoint, so the addresses only need to be distinct and well-formed for
   * the configured chain; the BIP32 math is the same on every chain, only
   * the address encoding differs, and no live payment ever depends on them.
   */
  requireNetworkMatch: boolean;
}

/** A decoded, validated extended public key. */
export interface ExtendedPublicKey {
  version: KeyVersion;
  depth: number;
  parentFingerprint: number;
  childIndex: number;
  chainCode: Uint8Array;
  /** 33-byte compressed SEC1 point. */
  publicKey: Uint8Array;
}

/** Longest input considered; a descriptor with origin is about 200 characters. */
export const MAX_WATCH_KEY_LENGTH = 1000;
const SERIALIZED_LENGTH = 78;
const ENCODED_LENGTH = 111;
const ACCEPTED_KINDS = 'xpub, ypub, zpub (mainnet) or tpub, upub, vpub (testnet, signet, regtest)';
const EVERY_KIND = 'an xpub, ypub, zpub, tpub, upub or vpub';
// A base58 address is a version byte and a 20-byte hash.
const ADDRESS_PAYLOAD_LENGTH = 21;
const SEGWIT_ADDRESS = /^(?:bc|tb|bcrt)1[02-9ac-hj-np-z]{8,87}$/i;
const ADDRESS_MESSAGE = `that is a Bitcoin address, not an extended public key: Till derives a fresh address per invoice, so it needs your wallet's extended public key (${ACCEPTED_KINDS})`;

function refuse(message: string): never {
  throw invalidField('xpub', message);
}

export function parseWatchKey(input: string, network: TillNetwork, opts: ParseWatchKeyOptions): WatchKey {
  if (typeof input !== 'string') refuse('xpub must be a string');
  const text = input.trim();
  if (text === '') refuse('xpub is empty: paste an extended public key or a descriptor from your wallet');
  if (text.length > MAX_WATCH_KEY_LENGTH) {
    refuse(`xpub is too long (${text.length} characters; at most ${MAX_WATCH_KEY_LENGTH})`);
  }
  const secret = findPrivateKey(text);
  if (secret !== null) refuse(privateKeyMessage(secret));
  if (/\s/.test(text)) refuse('xpub must not contain spaces or line breaks');
  if (SEGWIT_ADDRESS.test(text)) refuse(ADDRESS_MESSAGE);

  const isDescriptor = text.includes('(');
  const descriptor = isDescriptor ? parseDescriptor(text) : null;
  const xpub = descriptor?.keyText ?? text;
  const key = decodeExtendedPublicKey(xpub);
  if (key.version.scriptType === null) {
    refuse(`multisig extended keys (${key.version.prefix}) are not supported: Till watches single-key wallets`);
  }
  if (opts.requireNetworkMatch) checkNetwork(key.version, network);
  const scriptType = descriptor?.scriptType ?? key.version.scriptType;
  const receiveBranch = descriptor?.receiveBranch ?? [0];
  return {
    kind: descriptor ? 'descriptor' : 'xpub',
    scriptType,
    keyNetwork: key.version.keyNetwork,
    normalized: descriptor?.normalized ?? text,
    xpub,
    fingerprint: descriptor?.fingerprint ?? null,
    originPath: descriptor?.originPath ?? null,
    parentFingerprint: key.parentFingerprint.toString(16).padStart(8, '0'),
    depth: key.depth,
    receiveBranch,
    identity: `${scriptType}:${Buffer.from(key.publicKey).toString('hex')}:${Buffer.from(key.chainCode).toString('hex')}:${receiveBranch.join('/')}`,
  };
}

/** Decodes and validates a BIP32-serialized extended public key (any known public version). */
export function decodeExtendedPublicKey(text: string): ExtendedPublicKey {
  const decoded = decodeBase58Check(text);
  if (!decoded.ok) {
    if (decoded.reason === 'characters') {
      refuse(`not an extended public key: it contains characters that never appear in one; expected ${ACCEPTED_KINDS}`);
    }
    if (text.length !== ENCODED_LENGTH) {
      refuse(`wrong length for an extended public key: ${text.length} characters, where ${EVERY_KIND} has ${ENCODED_LENGTH}; copy it again from your wallet, in full`);
    }
    refuse('the extended public key checksum does not match: a character was mistyped; copy it again from your wallet');
  }
  const bytes = decoded.payload;
  if (bytes.length === ADDRESS_PAYLOAD_LENGTH) refuse(ADDRESS_MESSAGE);
  if (bytes.length !== SERIALIZED_LENGTH) {
    refuse(`wrong length for an extended public key: ${text.length} characters, where ${EVERY_KIND} has ${ENCODED_LENGTH}; expected ${ACCEPTED_KINDS}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = findKeyVersion(view.getUint32(0));
  if (version === undefined) refuse(`unknown extended key version; expected ${ACCEPTED_KINDS}`);
  if (version.isPrivate) refuse(privateKeyMessage(`an extended private key (${version.prefix})`));
  const depth = bytes[4]!;
  const parentFingerprint = view.getUint32(5);
  const childIndex = view.getUint32(9);
  if (depth === 0 && (parentFingerprint !== 0 || childIndex !== 0)) {
    refuse('invalid extended public key: a master key (depth 0) cannot have a parent fingerprint or child index');
  }
  const publicKey = bytes.slice(45, 78);
  if ((publicKey[0] !== 0x02 && publicKey[0] !== 0x03) || !ecc.isPoint(publicKey)) {
    refuse('invalid extended public key: its public key is not a valid secp256k1 point');
  }
  return { version, depth, parentFingerprint, childIndex, chainCode: bytes.slice(13, 45), publicKey };
}

function privateKeyMessage(what: string): string {
  return (
    `this is a PRIVATE key: the input contains ${what}; Till never needs a private key and has not stored it: ` +
    'paste the extended PUBLIC key (xpub, ypub, zpub, tpub, upub, vpub) or a public descriptor from your wallet instead'
  );
}

function checkNetwork(version: KeyVersion, network: TillNetwork): void {
  const expected = keyNetworkOf(network);
  if (version.keyNetwork === expected) return;
  const keyName = version.keyNetwork === 'main' ? 'mainnet' : 'testnet';
  const wanted = expected === 'main' ? 'mainnet keys (xpub, ypub, zpub)' : 'testnet keys (tpub, upub, vpub)';
  refuse(
    `this is a ${keyName} key (${version.prefix}), but this Till runs on ${describeNetwork(network)}, which uses ${wanted}: ` +
      `export the key for ${describeNetwork(network)} from your wallet`,
  );
}
