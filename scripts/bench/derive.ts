// Address derivation speed on one core: the fast path Till serves with
// (cached KEY/0 node, native HMAC + hashes, one tiny-secp256k1 point add per
// address) against the stock bip32 + bitcoinjs-lib payments path.
// Run: node scripts/bench/derive.ts
import { deriveReceiveAddresses } from '../../src/bitcoin/derive.ts';
import { parseWatchKey, type WatchKey } from '../../src/bitcoin/extended-key.ts';
import { deriveWithLibraries } from '../../src/bitcoin/internal/library-derive.ts';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
}

// BIP84 and BIP86 account keys (published test vectors).
const ZPUB =
  'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs';
const TR_DESCRIPTOR =
  'tr(xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ/0/*)';
const BATCH = 200;
const WINDOW_MS = 600;

type Derive = (key: WatchKey, network: 'main', fromIndex: number, count: number) => unknown;

/** Addresses per second over a short window, in batches like a pool refill. */
function measureRate(derive: Derive, key: WatchKey): number {
  derive(key, 'main', 0, BATCH); // warm-up: JIT, wasm, branch cache
  let derived = 0;
  const start = performance.now();
  while (performance.now() - start < WINDOW_MS) {
    derive(key, 'main', 1000 + derived, BATCH);
    derived += BATCH;
  }
  return Math.round((derived * 1000) / (performance.now() - start));
}

/** Median time of a 1,000-address refill, branch node already cached. */
function measureRefill(key: WatchKey): number {
  const times: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = performance.now();
    deriveReceiveAddresses(key, 'main', 100_000 + run * 1000, 1000);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[2]! * 10) / 10;
}

export async function runDeriveBench(): Promise<BenchResult[]> {
  const wpkh = parseWatchKey(ZPUB, 'main', { requireNetworkMatch: true });
  const tr = parseWatchKey(TR_DESCRIPTOR, 'main', { requireNetworkMatch: true });
  return [
    { name: 'derive', value: measureRate(deriveReceiveAddresses, wpkh), unit: 'addresses/s' },
    { name: 'pool refill 1000', value: measureRefill(wpkh), unit: 'ms' },
    { name: 'derive p2tr', value: measureRate(deriveReceiveAddresses, tr), unit: 'addresses/s' },
    { name: 'derive via bip32 + bitcoinjs payments', value: measureRate(deriveWithLibraries, wpkh), unit: 'addresses/s' },
    { name: 'derive p2tr via bip32 + bitcoinjs payments', value: measureRate(deriveWithLibraries, tr), unit: 'addresses/s' },
  ];
}

if (import.meta.main) {
  for (const { name, value, unit } of await runDeriveBench()) {
    if (name === 'derive') console.log(`derive: ${value} addresses/s (one core)`);
    else if (name === 'pool refill 1000') console.log(`pool refill 1000: ${value} ms`);
    else console.log(`${name}: ${value} ${unit}`);
  }
}
