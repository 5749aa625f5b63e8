// Kraken public ticker: GET /0/public/Ticker?pair=XBTUSD answers
// {"error":[],"result":{"XXBTZUSD":{"c":["<last trade price>","<lot volume>"],...}}}.
import type { RateProvider } from './provider.ts';
import {
  DEFAULT_TIMEOUT_MS,
  type HttpProviderOptions,
  fetchProviderJson,
  isRecord,
  parseProviderPrice,
  resolveBaseUrl,
} from './fetch-json.ts';

export const KRAKEN_BASE_URL = 'https://api.kraken.com';

export function createKrakenProvider(options: HttpProviderOptions = {}): RateProvider {
  const name = 'kraken';
  const url = `${resolveBaseUrl(name, options.baseUrl ?? KRAKEN_BASE_URL)}/0/public/Ticker?pair=XBTUSD`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    name,
    async fetchRate(signal) {
      const body = await fetchProviderJson(name, url, signal, timeoutMs);
      if (!isRecord(body) || !Array.isArray(body.error)) throw new Error(`${name}: answer has no error list`);
      // Kraken reports failures with HTTP 200 and a non-empty error list.
      if (body.error.length > 0) throw new Error(`${name}: ${body.error.map(String).join('; ').slice(0, 200)}`);
      const ticker = isRecord(body.result) ? body.result.XXBTZUSD : undefined;
      if (!isRecord(ticker) || !Array.isArray(ticker.c)) throw new Error(`${name}: answer has no result.XXBTZUSD.c`);
      return parseProviderPrice(name, ticker.c[0], 'result.XXBTZUSD.c[0]');
    },
  };
}
