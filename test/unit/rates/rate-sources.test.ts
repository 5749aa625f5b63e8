import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRateSources } from '../../../src/rates/provider.ts';
import { type FakeRateSource, startFakeRateSource } from '../../fakes/rate-source.ts';

describe('parseRateSources', () => {
  const valid: { spec: string; names: string[]; fixedCents?: number }[] = [
    { spec: 'kraken', names: ['kraken'] },
    { spec: 'kraken,bitstamp,coinbase', names: ['kraken', 'bitstamp', 'coinbase'] },
    { spec: ' coinbase , kraken ', names: ['coinbase', 'kraken'] },
    { spec: 'fixed:65000', names: ['fixed'], fixedCents: 6_500_000 },
    { spec: 'fixed:65000.50', names: ['fixed'], fixedCents: 6_500_050 },
    { spec: 'fixed:65000.5', names: ['fixed'], fixedCents: 6_500_050 },
    { spec: 'fixed:1', names: ['fixed'], fixedCents: 100 },
  ];
  for (const { spec, names, fixedCents } of valid) {
    test(`accepts ${JSON.stringify(spec)}`, async () => {
      const providers = parseRateSources(spec);
      assert.deepEqual(providers.map((p) => p.name), names);
      if (fixedCents !== undefined) {
        assert.equal(providers[0]!.fixedCentsPerBtc, fixedCents);
        assert.equal(await providers[0]!.fetchRate(new AbortController().signal), fixedCents);
      } else {
        assert.ok(providers.every((p) => p.fixedCentsPerBtc === undefined));
      }
    });
  }

  const invalid: { spec: string; error: RegExp }[] = [
    { spec: '', error: /empty entry/ },
    { spec: 'kraken,,bitstamp', error: /empty entry/ },
    { spec: 'kraken,', error: /empty entry/ },
    { spec: 'binance', error: /unknown source "binance"; known: kraken, bitstamp, coinbase, fixed:<usd>/ },
    { spec: 'Kraken', error: /unknown source "Kraken"/ },
    { spec: 'fixed', error: /unknown source "fixed"/ },
    { spec: 'toString', error: /unknown source "toString"/ },
    { spec: 'kraken,kraken', error: /kraken is listed twice/ },
    { spec: 'fixed:', error: /fixed rate "" must be USD per BTC/ },
    { spec: 'fixed:abc', error: /fixed rate "abc" must be USD per BTC/ },
    { spec: 'fixed:-65000', error: /must be USD per BTC/ },
    { spec: 'fixed:65000.505', error: /at most 2 decimals/ },
    { spec: 'fixed:6.5e4', error: /must be USD per BTC/ },
    { spec: 'fixed: 65000', error: /must be USD per BTC/ },
    { spec: 'fixed:0', error: /fixed rate: rate "0" is outside 1\.00\.\.100000000\.00/ },
    { spec: 'fixed:0.99', error: /is outside/ },
    { spec: 'fixed:100000000.01', error: /is outside/ },
    { spec: 'fixed:1000000000000', error: /fixed rate: rate "1000000000000" is outside 1\.00\.\.100000000\.00/ },
    { spec: 'fixed:65000,kraken', error: /cannot be combined/ },
    { spec: 'kraken,fixed:65000', error: /cannot be combined/ },
  ];
  for (const { spec, error } of invalid) {
    test(`rejects ${JSON.stringify(spec)}`, () => {
      assert.throws(() => parseRateSources(spec), error);
    });
  }
});

describe('parseRateSources options', () => {
  let fake: FakeRateSource;
  before(async () => {
    fake = await startFakeRateSource();
  });
  after(async () => {
    await fake.close();
  });

  test('base URLs and timeout reach the providers', async () => {
    fake.setPrice('kraken', '65000.00000');
    fake.setPrice('coinbase', '65001.00');
    fake.setMode('bitstamp', { kind: 'hang' });
    const providers = parseRateSources('kraken,coinbase,bitstamp', {
      baseUrls: { kraken: fake.url, coinbase: fake.url, bitstamp: fake.url },
      // Long enough for the answering ones on a loaded 2-core machine (100 ms was not, once).
      timeoutMs: 1000,
    });
    const signal = new AbortController().signal;
    const [kraken, coinbase, bitstamp] = providers;
    assert.equal(await kraken!.fetchRate(signal), 6_500_000);
    assert.equal(await coinbase!.fetchRate(signal), 6_500_100);
    await assert.rejects(bitstamp!.fetchRate(signal), /bitstamp: no answer within 1000 ms/);
  });

  test('a bad base URL is a config error', () => {
    assert.throws(() => parseRateSources('kraken', { baseUrls: { kraken: 'file:///etc/passwd' } }), /kraken: base URL must be http\(s\)/);
  });
});
