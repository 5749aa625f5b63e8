// Bitstamp public ticker: GET /api/v2/ticker/btcusd/ answers
// {"last":"<last trade price>","bid":"…","ask":"…","timestamp":"…",…}.
import type { RateProvider } from './provider.ts';
import { defineHttpProvider, type HttpProviderOptions, isRecord, parseProviderPrice } from './fetch-json.ts';

export const BITSTAMP_BASE_URL = 'https://www.bitstamp.net';

export function createBitstampProvider(options: HttpProviderOptions = {}): RateProvider {
  return defineHttpProvider({
    name: 'bitstamp',
    defaultBaseUrl: BITSTAMP_BASE_URL,
    path: '/api/v2/ticker/btcusd/',
    readPrice(body, name) {
      if (!isRecord(body)) throw new Error(`${name}: answer is not a JSON object`);
      return parseProviderPrice(name, body.last, 'last');
    },
  }, options);
}
