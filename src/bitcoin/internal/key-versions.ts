// BIP32 serialization version bytes Till recognises (BIP32, BIP49, BIP84;
// SLIP-0132 for the y/z/u/v and multisig variants).
import type { KeyNetwork } from '../networks.ts';

export type ScriptType = 'p2pkh' | 'p2sh-p2wpkh' | 'p2wpkh' | 'p2tr';

export interface KeyVersion {
  /** The four characters every key with these version bytes starts with. */
  prefix: string;
  keyNetwork: KeyNetwork;
  isPrivate: boolean;
  /** Single-key script type the version implies; null for multisig (Ypub...). */
  scriptType: Exclude<ScriptType, 'p2tr'> | null;
}

const VERSIONS = new Map<number, KeyVersion>([
  [0x0488b21e, { prefix: 'xpub', keyNetwork: 'main', isPrivate: false, scriptType: 'p2pkh' }],
  [0x049d7cb2, { prefix: 'ypub', keyNetwork: 'main', isPrivate: false, scriptType: 'p2sh-p2wpkh' }],
  [0x04b24746, { prefix: 'zpub', keyNetwork: 'main', isPrivate: false, scriptType: 'p2wpkh' }],
  [0x043587cf, { prefix: 'tpub', keyNetwork: 'test', isPrivate: false, scriptType: 'p2pkh' }],
  [0x044a5262, { prefix: 'upub', keyNetwork: 'test', isPrivate: false, scriptType: 'p2sh-p2wpkh' }],
  [0x045f1cf6, { prefix: 'vpub', keyNetwork: 'test', isPrivate: false, scriptType: 'p2wpkh' }],
  [0x0295b43f, { prefix: 'Ypub', keyNetwork: 'main', isPrivate: false, scriptType: null }],
  [0x02aa7ed3, { prefix: 'Zpub', keyNetwork: 'main', isPrivate: false, scriptType: null }],
  [0x024289ef, { prefix: 'Upub', keyNetwork: 'test', isPrivate: false, scriptType: null }],
  [0x02575483, { prefix: 'Vpub', keyNetwork: 'test', isPrivate: false, scriptType: null }],
  [0x0488ade4, { prefix: 'xprv', keyNetwork: 'main', isPrivate: true, scriptType: 'p2pkh' }],
  [0x049d7878, { prefix: 'yprv', keyNetwork: 'main', isPrivate: true, scriptType: 'p2sh-p2wpkh' }],
  [0x04b2430c, { prefix: 'zprv', keyNetwork: 'main', isPrivate: true, scriptType: 'p2wpkh' }],
  [0x04358394, { prefix: 'tprv', keyNetwork: 'test', isPrivate: true, scriptType: 'p2pkh' }],
  [0x044a4e28, { prefix: 'uprv', keyNetwork: 'test', isPrivate: true, scriptType: 'p2sh-p2wpkh' }],
  [0x045f18bc, { prefix: 'vprv', keyNetwork: 'test', isPrivate: true, scriptType: 'p2wpkh' }],
  [0x0295b005, { prefix: 'Yprv', keyNetwork: 'main', isPrivate: true, scriptType: null }],
  [0x02aa7a99, { prefix: 'Zprv', keyNetwork: 'main', isPrivate: true, scriptType: null }],
  [0x024285b5, { prefix: 'Uprv', keyNetwork: 'test', isPrivate: true, scriptType: null }],
  [0x02575048, { prefix: 'Vprv', keyNetwork: 'test', isPrivate: true, scriptType: null }],
]);

export const PRIVATE_KEY_PREFIXES: readonly string[] = [...VERSIONS.values()]
  .filter((v) => v.isPrivate)
  .map((v) => v.prefix);

export function findKeyVersion(version: number): KeyVersion | undefined {
  return VERSIONS.get(version);
}

