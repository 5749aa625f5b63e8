// Output descriptors (BIP380-386, BIP389 multipath), restricted to what a
// till needs: one single-key script type and one extended public key whose
// receive branch yields a fresh address per invoice. Accepted:
//
//   pkh(KEY) | wpkh(KEY) | sh(wpkh(KEY)) | tr(KEY)   optionally followed by #checksum
//   KEY = [fingerprint/path]? EXTENDED_PUBLIC_KEY ( "" | /0/* | /<0;1>/* )
//
// The bare form (no path after the key) is read like a bare xpub: the key is
// the account key and receive addresses come from its branch 0. Everything
// else (multisig, script trees, hardened steps after the key, other branches)
// is refused with a message that says what to export instead.
//
// This module checks structure only; the key itself is decoded and checked by
// extended-key.ts.
import { invalidField } from '../domain/errors.ts';
import { MAX_NON_HARDENED_INDEX } from './internal/child-key.ts';
import { CHECKSUM_CHARSET, computeDescriptorChecksum } from './internal/descriptor-checksum.ts';
import type { ScriptType } from './internal/key-versions.ts';

export interface ParsedDescriptor {
  scriptType: ScriptType;
  /** The extended key exactly as written (no origin, no path). */
  keyText: string;
  /** Master key fingerprint from the key origin, lower-case hex; null without origin. */
  fingerprint: string | null;
  /** Origin path such as "84h/0h/0h" (hardened always as h); "" for `[fingerprint]` alone; null without origin. */
  originPath: string | null;
  /** Path under the key to the receive branch. */
  receiveBranch: readonly number[];
  /** The receive descriptor Till watches, without checksum: e.g. `wpkh([d34db33f/84h/0h/0h]xpub.../0/*)`. */
  normalized: string;
}

interface Wrapper {
  pattern: RegExp;
  scriptType: ScriptType;
  open: string;
  close: string;
}

const WRAPPERS: readonly Wrapper[] = [
  { pattern: /^pkh\((.*)\)$/, scriptType: 'p2pkh', open: 'pkh(', close: ')' },
  { pattern: /^wpkh\((.*)\)$/, scriptType: 'p2wpkh', open: 'wpkh(', close: ')' },
  { pattern: /^sh\(wpkh\((.*)\)\)$/, scriptType: 'p2sh-p2wpkh', open: 'sh(wpkh(', close: '))' },
  { pattern: /^tr\((.*)\)$/, scriptType: 'p2tr', open: 'tr(', close: ')' },
];

const SUPPORTED = 'Till accepts pkh(KEY), wpkh(KEY), sh(wpkh(KEY)) or tr(KEY)';
const KEY_FORMS = 'KEY, KEY/0/* or KEY/<0;1>/*';
const RECEIVE_BRANCH: readonly number[] = [0];

function refuse(message: string): never {
  throw invalidField('xpub', message);
}

export function parseDescriptor(input: string): ParsedDescriptor {
  const body = checkChecksum(input);
  const wrapper = WRAPPERS.find((w) => w.pattern.test(body));
  if (!wrapper) refuseUnsupported(body);
  const keyExpression = wrapper.pattern.exec(body)![1]!;
  if (/[(),{}]/.test(keyExpression)) {
    refuse(
      wrapper.scriptType === 'p2tr'
        ? `tr() with script paths is not supported: ${SUPPORTED}, with a single key`
        : `${wrapper.open}${wrapper.close} must hold a single key: ${SUPPORTED}`,
    );
  }
  const { fingerprint, originPath, keyText } = splitKeyExpression(keyExpression);
  const origin = fingerprint === null ? '' : `[${fingerprint}${originPath ? `/${originPath}` : ''}]`;
  return {
    scriptType: wrapper.scriptType,
    keyText,
    fingerprint,
    originPath,
    receiveBranch: RECEIVE_BRANCH,
    normalized: `${wrapper.open}${origin}${keyText}/0/*${wrapper.close}`,
  };
}

/** A descriptor body with its BIP380 checksum appended, as Bitcoin Core prints it. */
export function addDescriptorChecksum(body: string): string {
  const checksum = computeDescriptorChecksum(body);
  if (checksum === null) refuse('the descriptor contains a character descriptors never use');
  return `${body}#${checksum}`;
}

/** Verifies the checksum when one is present; returns the body without it. */
function checkChecksum(input: string): string {
  const hash = input.indexOf('#');
  if (hash === -1) return input;
  const body = input.slice(0, hash);
  const checksum = input.slice(hash + 1);
  if (checksum.length !== 8 || [...checksum].some((c) => !CHECKSUM_CHARSET.includes(c))) {
    refuse('a descriptor checksum is 8 characters after "#" (BIP380); this one is malformed');
  }
  const expected = computeDescriptorChecksum(body);
  if (expected === null) refuse('the descriptor contains a character descriptors never use');
  if (expected !== checksum) {
    refuse('the descriptor checksum does not match: the descriptor was mistyped or altered; copy it again from your wallet');
  }
  return body;
}

function refuseUnsupported(body: string): never {
  const name = /^([a-z_]+)\(/.exec(body)?.[1];
  if (name === undefined) refuse(`not a descriptor Till understands: ${SUPPORTED}`);
  if (WRAPPERS.some((w) => body.startsWith(w.open))) {
    refuse(`the descriptor is malformed: check its parentheses; ${SUPPORTED}`);
  }
  if (name === 'multi' || name === 'sortedmulti' || name === 'wsh' || /^sh\((?:wsh|multi|sortedmulti)\(/.test(body)) {
    refuse(`multisig and script descriptors are not supported: Till watches single-key wallets; ${SUPPORTED}`);
  }
  if (name === 'sh') refuse(`sh() is supported only around wpkh(): ${SUPPORTED}`);
  refuse(`${name}() descriptors are not supported: ${SUPPORTED}`);
}

function splitKeyExpression(expression: string): {
  fingerprint: string | null;
  originPath: string | null;
  keyText: string;
} {
  let rest = expression;
  let fingerprint: string | null = null;
  let originPath: string | null = null;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close === -1) refuse('the key origin is missing its closing "]"');
    ({ fingerprint, originPath } = parseOrigin(rest.slice(1, close)));
    rest = rest.slice(close + 1);
  }
  if (/[[\]]/.test(rest)) {
    refuse('a key origin is written once, as [fingerprint/path], directly before the key');
  }
  const slash = rest.indexOf('/');
  const keyText = slash === -1 ? rest : rest.slice(0, slash);
  const suffix = slash === -1 ? '' : rest.slice(slash);
  if (keyText === '') refuse('the descriptor has no key');
  if (/^(?:0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128}|[0-9a-fA-F]{64})$/.test(keyText)) {
    refuse(
      'that descriptor holds a single public key, which gives only one address: Till needs an extended public key (xpub, ypub, zpub, tpub, upub or vpub) to derive a fresh address per invoice',
    );
  }
  checkSuffix(suffix);
  return { fingerprint, originPath, keyText };
}

function parseOrigin(origin: string): { fingerprint: string; originPath: string } {
  const [fingerprint = '', ...steps] = origin.split('/');
  if (!/^[0-9a-fA-F]{8}$/.test(fingerprint)) {
    refuse('the key origin must start with an 8-character hex fingerprint, as in [d34db33f/84h/0h/0h]');
  }
  const normalized = steps.map((step) => {
    const match = /^(\d{1,10})(['h]?)$/.exec(step);
    if (!match || Number(match[1]) > MAX_NON_HARDENED_INDEX) {
      refuse(`each key origin step is a number up to ${MAX_NON_HARDENED_INDEX}, optionally followed by h or ' (hardened)`);
    }
    return `${Number(match[1])}${match[2] ? 'h' : ''}`;
  });
  return { fingerprint: fingerprint.toLowerCase(), originPath: normalized.join('/') };
}

function checkSuffix(suffix: string): void {
  if (suffix === '' || suffix === '/0/*' || suffix === '/<0;1>/*') return;
  if (/[\d*]['hH]/.test(suffix)) {
    refuse(
      `hardened derivation after the key needs the private key: export the extended public key at the last hardened step (the account key, e.g. m/84h/0h/0h) and use ${KEY_FORMS}`,
    );
  }
  if (/^\/\d+\/\*$/.test(suffix) || suffix === '/*' || /^\/<[^>]*>\/\*$/.test(suffix)) {
    refuse(`receive addresses are handed out from branch 0 of the account key: use ${KEY_FORMS}`);
  }
  refuse(`unsupported derivation after the key: Till accepts ${KEY_FORMS}`);
}
