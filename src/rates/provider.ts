// A source of the USD price of one BTC, and the config string that picks them:
// `kraken,bitstamp,coinbase` (any subset, any order) or `fixed:<usd>`.
import { createBitstampProvider } from './bitstamp.ts';
import { createCoinbaseProvider } from './coinbase.ts';
import { createFixedProvider } from './fixed.ts';
import { createKrakenProvider } from './kraken.ts';

export interface RateProvider {
  readonly name: string;
  /** Integer cents per BTC; rejects on any failure, never resolves to a bad number. */
  fetchRate(signal: AbortSignal): Promise<number>;
  /** Set only by `fixed:`: the rate is constant and never goes stale. */
  readonly fixedCentsPerBtc?: number;
}

const HTTP_PROVIDERS = {
  kraken: createKrakenProvider,
  bitstamp: createBitstampProvider,
  coinbase: createCoinbaseProvider,
} as const;

type HttpProviderName = keyof typeof HTTP_PROVIDERS;

export interface RateSourceOptions {
  /** Per-provider origin overrides, e.g. a local fake in tests. */
  baseUrls?: Partial<Record<HttpProviderName, string>>;
  timeoutMs?: number;
}

export function parseRateSources(spec: string, options: RateSourceOptions = {}): RateProvider[] {
  const names = spec.split(',').map((part) => part.trim());
  if (names.some((name) => name === '')) {
    throw new Error(`rate sources ${JSON.stringify(spec)}: empty entry; use e.g. "kraken,bitstamp,coinbase" or "fixed:65000"`);
  }
  const fixed = names.find((name) => name.startsWith('fixed:'));
  if (fixed !== undefined) {
    // A median of a constant and live prices would be neither.
    if (names.length > 1) throw new Error('rate sources: fixed:<usd> cannot be combined with other sources');
    return [createFixedProvider(fixed.slice('fixed:'.length))];
  }
  const seen = new Set<string>();
  return names.map((name) => {
    if (!Object.hasOwn(HTTP_PROVIDERS, name)) {
      throw new Error(`rate sources: unknown source ${JSON.stringify(name)}; known: ${Object.keys(HTTP_PROVIDERS).join(', ')}, fixed:<usd>`);
    }
    if (seen.has(name)) throw new Error(`rate sources: ${name} is listed twice`);
    seen.add(name);
    const providerName = name as HttpProviderName;
    return HTTP_PROVIDERS[providerName]({
      baseUrl: options.baseUrls?.[providerName],
      timeoutMs: options.timeoutMs,
    });
  });
}
