import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createBitstampProvider } from '../../../src/rates/bitstamp.ts';
import { createCoinbaseProvider } from '../../../src/rates/coinbase.ts';
import { createKrakenProvider } from '../../../src/rates/kraken.ts';
import type { RateProvider } from '../../../src/rates/provider.ts';
import { type FakeProvider, type FakeRateSource, startFakeRateSource } from '../../fakes/rate-source.ts';

const TIMEOUT_MS = 200;

let fake: FakeRateSource;
before(async () => {
  fake = await startFakeRateSource();
});
after(async () => {
  await fake.close();
});

const factories: Record<FakeProvider, (options: { baseUrl: string; timeoutMs: number }) => RateProvider> = {
  kraken: createKrakenProvider,
  bitstamp: createBitstampProvider,
  coinbase: createCoinbaseProvider,
};

// Bodies with the right transport but the wrong content, per provider.
const badBodies: Record<FakeProvider, { body: unknown; error: RegExp }[]> = {
  kraken: [
    { body: { error: ['EQuery:Unknown asset pair'] }, error: /kraken: EQuery:Unknown asset pair/ },
    { body: { error: [], result: {} }, error: /no result\.XXBTZUSD\.c/ },
    { body: { error: [], result: { XXBTZUSD: { c: [] } } }, error: /c\[0\] is not a numeric string/ },
    { body: { error: [], result: { XXBTZUSD: { c: [97000.1, '1'] } } }, error: /c\[0\] is not a numeric string/ },
    { body: { error: [], result: { XXBTZUSD: { c: ['-97000', '1'] } } }, error: /not a plain decimal/ },
    { body: { error: [], result: { XXBTZUSD: { c: ['0.00000', '1'] } } }, error: /is outside/ },
    { body: { error: [], result: { XXBTZUSD: { c: ['NaN', '1'] } } }, error: /not a plain decimal/ },
    { body: { result: { XXBTZUSD: { c: ['97000', '1'] } } }, error: /no error list/ },
  ],
  bitstamp: [
    { body: {}, error: /last is not a numeric string/ },
    { body: { last: 97000.5 }, error: /last is not a numeric string/ },
    { body: { last: '' }, error: /not a plain decimal/ },
    { body: { last: '9.7e4' }, error: /not a plain decimal/ },
    { body: { last: '970000000000' }, error: /is outside/ },
    { body: [], error: /not a JSON object/ },
    { body: null, error: /not a JSON object/ },
  ],
  coinbase: [
    { body: { data: { amount: '97000.00', base: 'BTC', currency: 'EUR' } }, error: /currency is not USD/ },
    { body: { data: { amount: '3000.00', base: 'ETH', currency: 'USD' } }, error: /base is not BTC/ },
    { body: { data: { base: 'BTC', currency: 'USD' } }, error: /data\.amount is not a numeric string/ },
    { body: { data: { amount: 'abc', base: 'BTC', currency: 'USD' } }, error: /not a plain decimal/ },
    { body: { errors: [{ id: 'not_found', message: 'Invalid currency' }] }, error: /no data object/ },
  ],
};

const goodPrices: Record<FakeProvider, { price: string; cents: number }> = {
  kraken: { price: '97123.45678', cents: 9_712_346 },
  bitstamp: { price: '97123', cents: 9_712_300 },
  coinbase: { price: '97123.40', cents: 9_712_340 },
};

for (const name of ['kraken', 'bitstamp', 'coinbase'] as const) {
  describe(`${name} provider`, () => {
    let provider: RateProvider;
    beforeEach(() => {
      provider = factories[name]({ baseUrl: fake.url, timeoutMs: TIMEOUT_MS });
      fake.setMode(name, { kind: 'ok' });
    });

    test('reads the price as integer cents', async () => {
      fake.setPrice(name, goodPrices[name].price);
      assert.equal(provider.name, name);
      assert.equal(await provider.fetchRate(new AbortController().signal), goodPrices[name].cents);
    });

    test('garbage JSON is an error naming the provider', async () => {
      fake.setMode(name, { kind: 'garbage' });
      await assert.rejects(provider.fetchRate(new AbortController().signal), new RegExp(`^Error: ${name}: answer is not JSON`));
    });

    test('HTTP 500 is an error', async () => {
      fake.setMode(name, { kind: 'status500' });
      await assert.rejects(provider.fetchRate(new AbortController().signal), new RegExp(`${name}: HTTP 500`));
    });

    test('a hanging provider times out', async () => {
      fake.setMode(name, { kind: 'hang' });
      const started = performance.now();
      await assert.rejects(provider.fetchRate(new AbortController().signal), new RegExp(`${name}: no answer within ${TIMEOUT_MS} ms`));
      const elapsed = performance.now() - started;
      assert.ok(elapsed >= TIMEOUT_MS - 20 && elapsed < TIMEOUT_MS + 1_000, `took ${elapsed} ms`);
    });

    test("the caller's signal cancels the request", async () => {
      fake.setMode(name, { kind: 'hang' });
      const slow = factories[name]({ baseUrl: fake.url, timeoutMs: 10_000 });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(slow.fetchRate(controller.signal), new RegExp(`${name}: request cancelled`));
    });

    test('an oversized answer is refused', async () => {
      fake.setMode(name, { kind: 'body', body: JSON.stringify({ padding: 'x'.repeat(100_000) }) });
      await assert.rejects(provider.fetchRate(new AbortController().signal), /answer larger than 65536 bytes/);
    });

    for (const { body, error } of badBodies[name]) {
      test(`rejects ${JSON.stringify(body)}`, async () => {
        fake.setMode(name, { kind: 'body', body: JSON.stringify(body) });
        await assert.rejects(provider.fetchRate(new AbortController().signal), (e: unknown) => {
          assert.ok(e instanceof Error);
          assert.match(e.message, new RegExp(`^${name}: `));
          assert.match(e.message, error);
          return true;
        });
      });
    }
  });
}

test('an unreachable provider is an error, not a hang', async () => {
  // Port 9 on loopback: nothing listens there, so the connection is refused.
  const provider = createKrakenProvider({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 2_000 });
  await assert.rejects(provider.fetchRate(new AbortController().signal), /kraken: request failed/);
});

test('base URLs must be http(s)', () => {
  assert.throws(() => createCoinbaseProvider({ baseUrl: 'ftp://127.0.0.1' }), /coinbase: base URL must be http\(s\)/);
  assert.throws(() => createBitstampProvider({ baseUrl: 'not a url' }), /bitstamp: base URL "not a url" is not a URL/);
});
