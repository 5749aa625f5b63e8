// Bitstamp public ticker: GET /api/v2/ticker/btcusd/ answers
// {"last":"<last trade price>","bid":"…","ask":"…","timestamp":"…",…}.
import type { RateProvider } from './provider.ts';
import {
  DEFAULT_TIMEOUT_MS,
  type HttpProviderOptions,
  fetchProviderJson,
  isRecord,
  parseProviderPrice,
  resolveBaseUrl,
} from './fetch-json.ts';

export const BITSTAMP_BASE_URL = 'https://www.bitstamp.net';

export function createBitstampProvider(options: HttpProviderOptions = {}): RateProvider {
  const name = 'bitstamp';
  const url = `${resolveBaseUrl(name, options.baseUrl ?? BITSTAMP_BASE_URL)}/api/v2/ticker/btcusd/`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    name,
    async fetchRate(signal) {
      const body = await fetchProviderJson(name, url, signal, timeoutMs);
      if (!isRecord(body)) throw new Error(`${name}: answer is not a JSON object`);
      return parseProviderPrice(name, body.last, 'last');
    },
  };
}
