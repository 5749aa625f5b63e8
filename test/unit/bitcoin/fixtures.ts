// Typed loading of the vendored vectors in test/fixtures/bitcoin/.
import { readFileSync } from 'node:fs';
import type { DerivedAddress } from '../../../src/bitcoin/derive.ts';
import type { WatchKey } from '../../../src/bitcoin/extended-key.ts';
import type { TillNetwork } from '../../../src/bitcoin/networks.ts';

export interface ValidCase {
  description: string;
  input: string;
  network: TillNetwork;
  requireNetworkMatch: boolean;
  expect: Partial<WatchKey>;
  addresses?: DerivedAddress[];
  checkedBy?: string;
}

export interface InvalidCase {
  description: string;
  input: string;
  network: TillNetwork;
  requireNetworkMatch: boolean;
  /** Regular expression the error message must match. */
  error: string;
  private?: boolean;
}

export interface WatchKeyFixture {
  source: string;
  valid: ValidCase[];
  invalid: InvalidCase[];
}

export interface Bip32Fixture extends WatchKeyFixture {
  derivations: Array<{
    description: string;
    parent: string;
    path: number[];
    expect: { xpub?: string; publicKey?: string; hash160?: string };
  }>;
}

export interface DescriptorFixture extends WatchKeyFixture {
  checksums: Array<{ body: string; checksum: string; source: string }>;
}

export const WATCH_KEY_FIXTURES = [
  'bip32.json',
  'bip49.json',
  'bip84.json',
  'bip86.json',
  'descriptors.json',
  'watch-key-refusals.json',
] as const;

export function loadFixture<T = WatchKeyFixture>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../../fixtures/bitcoin/${name}`, import.meta.url), 'utf8')) as T;
}
