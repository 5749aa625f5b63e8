// Kraken public ticker: GET /0/public/Ticker?pair=XBTUSD answers
// {"error":[],"result":{"XXBTZUSD":{"c":["<last trade price>","<lot volume>"],...}}}.
import type { RateProvider } from './provider.ts';
import { defineHttpProvider, type HttpProviderOptions, isRecord, parseProviderPrice } from './fetch-json.ts';

export const KRAKEN_BASE_URL = 'https://api.kraken.com';

export function createKrakenProvider(options: HttpProviderOptions = {}): RateProvider {
  return defineHttpProvider({
    name: 'kraken',
    defaultBaseUrl: KRAKEN_BASE_URL,
    path: '/0/public/Ticker?pair=XBTUSD',
    readPrice(body, name) {
      if (!isRecord(body) || !Array.isArray(body.error)) throw new Error(`${name}: answer has no error list`);
      // Kraken reports failures with HTTP 200 and a non-empty error list.
      if (body.error.length > 0) throw new Error(`${name}: ${body.error.map(String).join('; ').slice(0, 200)}`);
      const ticker = isRecord(body.result) ? body.result.XXBTZUSD : undefined;
      if (!isRecord(ticker) || !Array.isArray(ticker.c)) throw new Error(`${name}: answer has no result.XXBTZUSD.c`);
      return parseProviderPrice(name, ticker.c[0], 'result.XXBTZUSD.c[0]');
    },
  }, options);
}
