// Coinbase public spot price: GET /v2/prices/BTC-USD/spot answers
// {"data":{"amount":"<price>","base":"BTC","currency":"USD"}}.
import type { RateProvider } from './provider.ts';
import { defineHttpProvider, type HttpProviderOptions, isRecord, parseProviderPrice } from './fetch-json.ts';

export const COINBASE_BASE_URL = 'https://api.coinbase.com';

export function createCoinbaseProvider(options: HttpProviderOptions = {}): RateProvider {
  return defineHttpProvider({
    name: 'coinbase',
    defaultBaseUrl: COINBASE_BASE_URL,
    path: '/v2/prices/BTC-USD/spot',
    readPrice(body, name) {
      const data = isRecord(body) ? body.data : undefined;
      if (!isRecord(data)) throw new Error(`${name}: answer has no data object`);
      // A price in another pair would be silently wrong by a large factor.
      if (data.base !== undefined && data.base !== 'BTC') throw new Error(`${name}: data.base is not BTC`);
      if (data.currency !== undefined && data.currency !== 'USD') throw new Error(`${name}: data.currency is not USD`);
      return parseProviderPrice(name, data.amount, 'data.amount');
    },
  }, options);
}
