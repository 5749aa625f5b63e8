// A real HTTP server on 127.0.0.1 that answers the Kraken, Bitstamp and Coinbase
// ticker paths like the real ones do, with prices the test sets. Per provider it
// can instead answer 500, garbage, a custom body, or hang until the client gives up.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../helpers/listen.ts';

export type FakeProvider = 'kraken' | 'bitstamp' | 'coinbase';

export type FakeMode =
  | { kind: 'ok' }
  | { kind: 'status500' }
  | { kind: 'garbage' }
  | { kind: 'hang' }
  /** Answer 200 with this exact JSON text (to test shape checks). */
  | { kind: 'body'; body: string };

export interface FakeRateSource {
  /** Origin to pass as every provider's base URL. */
  readonly url: string;
  /** The price as the provider would write it, e.g. "97123.40000". */
  setPrice(provider: FakeProvider, price: string): void;
  setMode(provider: FakeProvider, mode: FakeMode): void;
  /** How many requests each provider's path has had. */
  requestCount(provider: FakeProvider): number;
  close(): Promise<void>;
}

const PATHS: Record<string, FakeProvider> = {
  '/0/public/Ticker?pair=XBTUSD': 'kraken',
  '/api/v2/ticker/btcusd/': 'bitstamp',
  '/v2/prices/BTC-USD/spot': 'coinbase',
};

export async function startFakeRateSource(): Promise<FakeRateSource> {
  const prices: Record<FakeProvider, string> = { kraken: '97000.00000', bitstamp: '97000', coinbase: '97000.00' };
  const modes: Record<FakeProvider, FakeMode> = { kraken: { kind: 'ok' }, bitstamp: { kind: 'ok' }, coinbase: { kind: 'ok' } };
  const counts: Record<FakeProvider, number> = { kraken: 0, bitstamp: 0, coinbase: 0 };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const provider = PATHS[req.url ?? ''];
    if (req.method !== 'GET' || !provider) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not found"}');
      return;
    }
    counts[provider]++;
    const mode = modes[provider];
    switch (mode.kind) {
      case 'hang':
        return; // never answer; the client's timeout must end it
      case 'status500':
        res.writeHead(500, { 'content-type': 'text/html' }).end('<html>Internal Server Error</html>');
        return;
      case 'garbage':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"result": {"XXBTZUSD": [tru');
        return;
      case 'body':
        res.writeHead(200, { 'content-type': 'application/json' }).end(mode.body);
        return;
      case 'ok':
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(tickerBody(provider, prices[provider])));
        return;
    }
  });
  const url = await listenOnLoopback(server);

  return {
    url,
    setPrice: (provider, price) => {
      prices[provider] = price;
      modes[provider] = { kind: 'ok' };
    },
    setMode: (provider, mode) => {
      modes[provider] = mode;
    },
    requestCount: (provider) => counts[provider],
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections(); // hung and keep-alive requests included
      }),
  };
}

/** The provider's real response shape (trimmed to the fields that matter plus a few neighbours). */
export function tickerBody(provider: FakeProvider, price: string): unknown {
  switch (provider) {
    case 'kraken':
      return {
        error: [],
        result: {
          XXBTZUSD: {
            a: [price, '1', '1.000'],
            b: [price, '2', '2.000'],
            c: [price, '0.00100000'],
            v: ['1000.1', '2000.2'],
            t: [3061, 6716],
            o: price,
          },
        },
      };
    case 'bitstamp':
      return { timestamp: '1763719200', open: price, high: price, low: price, last: price, volume: '1234.5', bid: price, ask: price };
    case 'coinbase':
      return { data: { amount: price, base: 'BTC', currency: 'USD' } };
  }
}
