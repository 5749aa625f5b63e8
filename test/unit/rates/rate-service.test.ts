import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../../src/clock.ts';
import { ApiError } from '../../../src/domain/errors.ts';
import { createFixedProvider } from '../../../src/rates/fixed.ts';
import { type RateProvider, parseRateSources } from '../../../src/rates/provider.ts';
import { type RateLogger, RateService, type RateStore, type StoredRate, agreeOnRate, medianCents } from '../../../src/rates/rate-service.ts';
import { type FakeRateSource, startFakeRateSource } from '../../fakes/rate-source.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const TEN_MINUTES = 600_000;

/** Stands in for the SQLite table: survives a "restart" when handed to a new service. */
function createMemoryStore(initial: StoredRate | null = null): RateStore & { saves: StoredRate[] } {
  let saved = initial;
  const saves: StoredRate[] = [];
  return {
    saves,
    load: () => saved,
    save: (rate) => {
      saved = rate;
      saves.push(rate);
    },
  };
}

function createLogger(): RateLogger & { warnings: { fields: object; message: string }[] } {
  const warnings: { fields: object; message: string }[] = [];
  return { warnings, info: () => {}, warn: (fields, message) => warnings.push({ fields, message }) };
}

function isRatesUnavailable(error: unknown): boolean {
  return error instanceof ApiError && error.code === 'rates_unavailable' && error.status === 503;
}

describe('medianCents', () => {
  const valid: { values: number[]; median: number; why: string }[] = [
    { values: [5], median: 5, why: 'one value' },
    { values: [300, 100, 200], median: 200, why: 'odd count, unsorted' },
    { values: [100, 200], median: 150, why: 'even count, exact mean' },
    { values: [1, 2], median: 2, why: 'even count, .5 rounds up' },
    { values: [9_700_000, 9_700_001], median: 9_700_001, why: 'half a cent rounds up' },
    { values: [4, 1, 3, 2], median: 3, why: 'four values: mean of 2 and 3 rounds up' },
    { values: [10_000_000_000, 10_000_000_000], median: 10_000_000_000, why: 'largest rates stay exact' },
  ];
  for (const { values, median, why } of valid) {
    test(why, () => assert.equal(medianCents(values), median));
  }
  test('no values is a bug', () => assert.throws(() => medianCents([]), RangeError));
});

describe('agreeOnRate', () => {
  const q = (...cents: number[]) => cents.map((c, i) => ({ name: ['kraken', 'bitstamp', 'coinbase', 'fourth'][i]!, cents: c }));
  const valid: { quotes: ReturnType<typeof q>; cents: number; used: string[]; why: string }[] = [
    { quotes: q(6_500_000), cents: 6_500_000, used: ['kraken'], why: 'one quote is taken: nothing to check it against' },
    { quotes: q(6_500_000, 6_510_000), cents: 6_505_000, used: ['kraken', 'bitstamp'], why: 'two close quotes: their mean' },
    { quotes: q(6_500_000, 65_000, 6_510_000), cents: 6_505_000, used: ['kraken', 'coinbase'], why: 'one quote in cents among three is left out' },
    { quotes: q(6_500_000, 6_510_000, 9_000_000), cents: 6_505_000, used: ['kraken', 'bitstamp'], why: 'a stuck market 38 % away is left out' },
    { quotes: q(9_500, 10_000, 10_500), cents: 10_000, used: ['kraken', 'bitstamp', 'coinbase'], why: 'exactly 5 % from the median still counts' },
    { quotes: q(9_499, 10_000, 10_000), cents: 10_000, used: ['bitstamp', 'coinbase'], why: 'just over 5 % is left out' },
    { quotes: q(6_500_000, 7_150_000), cents: 6_825_000, used: ['kraken', 'bitstamp'], why: 'two quotes 10 % apart are each 4.8 % from their mean: taken' },
  ];
  for (const { quotes, cents, used, why } of valid) {
    test(why, () => assert.deepEqual(agreeOnRate(quotes), { cents, used, left: quotes.map((x) => x.name).filter((n) => !used.includes(n)) }));
  }
  const invalid: { quotes: ReturnType<typeof q>; why: string }[] = [
    { quotes: q(6_500_000, 65_000), why: 'two quotes, one in cents: no rate, where the median said 32,825 USD' },
    { quotes: q(6_500_000, 7_500_000), why: 'two quotes 15 % apart' },
    { quotes: q(6_500_000, 7_200_000), why: 'two quotes 10.8 % apart, each over 5 % from their mean' },
    { quotes: q(100, 6_500_000, 9_000_000_000), why: 'three quotes all far apart' },
    { quotes: q(6_500_000, 6_500_000, 65_000, 65_000), why: 'a tie: two against two' },
  ];
  for (const { quotes, why } of invalid) {
    test(`no rate: ${why}`, () => assert.equal(agreeOnRate(quotes).cents, null));
  }
});

describe('RateService', () => {
  let fake: FakeRateSource;
  let clock: ManualClock;
  const services: RateService[] = [];

  before(async () => {
    fake = await startFakeRateSource();
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await fake.close();
  });
  beforeEach(() => {
    clock = new ManualClock('2026-11-21T10:00:00.000Z');
    for (const name of ['kraken', 'bitstamp', 'coinbase'] as const) fake.setMode(name, { kind: 'ok' });
  });

  function liveProviders(spec = 'kraken,bitstamp,coinbase', timeoutMs = 200): RateProvider[] {
    return parseRateSources(spec, {
      baseUrls: { kraken: fake.url, bitstamp: fake.url, coinbase: fake.url },
      timeoutMs,
    });
  }

  function createService(options: Partial<ConstructorParameters<typeof RateService>[0]> = {}): RateService {
    const service = new RateService({ providers: liveProviders(), clock, store: createMemoryStore(), ...options });
    services.push(service);
    return service;
  }

  test('median of three answers, persisted with its source and time', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '98000');
    fake.setPrice('coinbase', '97100.50');
    const store = createMemoryStore();
    const service = createService({ store });
    await service.refreshNow();
    const expected = { rateCentsPerBtc: 9_710_050, source: 'median(kraken,bitstamp,coinbase)', fetchedAt: clock.now() };
    assert.deepEqual(service.current(), expected);
    assert.deepEqual(store.saves, [expected]);
  });

  test('median of two answers is their mean, half a cent rounding up', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '97000.01');
    fake.setMode('coinbase', { kind: 'status500' });
    const logger = createLogger();
    const service = createService({ logger });
    await service.refreshNow();
    assert.deepEqual(service.current(), { rateCentsPerBtc: 9_700_001, source: 'median(kraken,bitstamp)', fetchedAt: clock.now() });
    assert.equal(logger.warnings.length, 1);
    assert.match(JSON.stringify(logger.warnings[0]!.fields), /coinbase: HTTP 500/);
  });

  test('a source far from the others is left out, named in a warning', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '970.00');
    fake.setPrice('coinbase', '97100.00');
    const logger = createLogger();
    const service = createService({ logger });
    await service.refreshNow();
    assert.deepEqual(service.current(), { rateCentsPerBtc: 9_705_000, source: 'median(kraken,coinbase)', fetchedAt: clock.now() });
    assert.deepEqual(logger.warnings.map((w) => w.message), ['rate source far from the others left out']);
    assert.deepEqual((logger.warnings[0]!.fields as { left_out: string[] }).left_out, ['bitstamp']);
  });

  test('two sources that disagree give no rate: the last one stays, ageing to 503', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '97000');
    fake.setPrice('coinbase', '97000.00');
    const logger = createLogger();
    const service = createService({ logger });
    await service.refreshNow();
    fake.setPrice('kraken', '97100.00000');
    fake.setPrice('bitstamp', '971.00');
    fake.setMode('coinbase', { kind: 'status500' });
    clock.advance(60_000);
    await service.refreshNow();
    assert.equal(service.current().rateCentsPerBtc, 9_700_000, 'not the mean of 97,100 and 971');
    assert.ok(logger.warnings.some((w) => w.message === 'rate sources disagree: the last rate stays'));
    clock.advance(TEN_MINUTES);
    assert.throws(() => service.current(), isRatesUnavailable);
  });

  test('one answer out of three is used alone and named', async () => {
    fake.setPrice('coinbase', '96500.00');
    fake.setMode('kraken', { kind: 'garbage' });
    fake.setMode('bitstamp', { kind: 'hang' });
    const service = createService();
    await service.refreshNow();
    assert.deepEqual(service.current(), { rateCentsPerBtc: 9_650_000, source: 'coinbase', fetchedAt: clock.now() });
  });

  test('a provider resolving a non-integer is ignored, never priced at', async () => {
    fake.setPrice('kraken', '97000.00000');
    const broken: RateProvider = { name: 'broken', fetchRate: async () => Number.NaN };
    const service = createService({ providers: [...liveProviders('kraken'), broken] });
    await service.refreshNow();
    assert.deepEqual(service.current(), { rateCentsPerBtc: 9_700_000, source: 'kraken', fetchedAt: clock.now() });
  });

  test('when no provider answers the last rate stays, ageing', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '97000');
    fake.setPrice('coinbase', '97000.00');
    const store = createMemoryStore();
    const service = createService({ store });
    await service.refreshNow();
    const first = service.current();

    for (const name of ['kraken', 'bitstamp', 'coinbase'] as const) fake.setMode(name, { kind: 'status500' });
    clock.advance(5 * 60_000);
    await service.refreshNow();
    assert.deepEqual(service.current(), first);
    assert.equal(store.saves.length, 1);
  });

  test('exactly 10 minutes old is fresh; 1 ms more is 503 rates_unavailable', async () => {
    const service = createService();
    await service.refreshNow();
    const fetchedAt = clock.now();
    clock.advance(TEN_MINUTES);
    assert.equal(service.current().fetchedAt, fetchedAt);
    clock.advance(1);
    assert.throws(() => service.current(), (error: unknown) => {
      assert.ok(isRatesUnavailable(error));
      assert.match((error as Error).message, /stale: last fetched at 2026-11-21T10:00:00\.000Z/);
      return true;
    });
  });

  test('a stale rate recovers on the next successful refresh', async () => {
    const service = createService();
    await service.refreshNow();
    clock.advance(TEN_MINUTES + 1);
    assert.throws(() => service.current(), isRatesUnavailable);
    fake.setPrice('kraken', '99000.00000');
    await service.refreshNow();
    assert.equal(service.current().fetchedAt, clock.now());
  });

  test('with no rate ever fetched, fiat pricing is 503 rates_unavailable', async () => {
    for (const name of ['kraken', 'bitstamp', 'coinbase'] as const) fake.setMode(name, { kind: 'status500' });
    const service = createService();
    assert.throws(() => service.current(), isRatesUnavailable);
    await service.refreshNow();
    assert.throws(() => service.current(), /No USD rate yet/);
  });

  test('after a restart without internet the stored rate is usable at once', async () => {
    fake.setPrice('kraken', '97000.00000');
    fake.setPrice('bitstamp', '97200');
    fake.setPrice('coinbase', '97100.00');
    const store = createMemoryStore();
    const before = createService({ store });
    await before.refreshNow();
    await before.stop();
    const priced = before.current();

    // The new process cannot reach anyone.
    clock.advance(3 * 60_000);
    const offline = parseRateSources('kraken,bitstamp,coinbase', { baseUrls: { kraken: 'http://127.0.0.1:9', bitstamp: 'http://127.0.0.1:9', coinbase: 'http://127.0.0.1:9' } });
    const restarted = createService({ store, providers: offline });
    assert.deepEqual(restarted.current(), priced);
    await restarted.refreshNow();
    assert.deepEqual(restarted.current(), priced);

    clock.advance(7 * 60_000 + 1);
    assert.throws(() => restarted.current(), isRatesUnavailable);
  });

  test('a stored rate older than 10 minutes is not used after a restart', () => {
    const store = createMemoryStore({ rateCentsPerBtc: 9_700_000, source: 'kraken', fetchedAt: clock.now() - TEN_MINUTES - 1 });
    const service = createService({ store });
    assert.throws(() => service.current(), isRatesUnavailable);
  });

  test('a stored rate stamped ahead of the clock (saved while it ran fast) is of unknown age: not used', () => {
    const store = createMemoryStore({ rateCentsPerBtc: 9_700_000, source: 'kraken', fetchedAt: clock.now() + 2 * 3600_000 });
    assert.throws(() => createService({ store }).current(), isRatesUnavailable);
    // A minute's skew between the saving and the reading clock is tolerated.
    const nearly = createMemoryStore({ rateCentsPerBtc: 9_700_000, source: 'kraken', fetchedAt: clock.now() + 60_000 });
    assert.equal(createService({ store: nearly }).current().rateCentsPerBtc, 9_700_000);
  });

  test('a malformed stored rate is ignored and logged', () => {
    const logger = createLogger();
    const store = createMemoryStore({ rateCentsPerBtc: 97000.5, source: 'kraken', fetchedAt: clock.now() });
    const service = createService({ store, logger });
    assert.throws(() => service.current(), isRatesUnavailable);
    assert.equal(logger.warnings[0]?.message, 'ignoring a malformed stored USD rate');
  });

  test('a store that cannot save does not lose the fresh rate', async () => {
    const logger = createLogger();
    const store: RateStore = {
      load: () => null,
      save: () => {
        throw new Error('SQLITE_FULL: database or disk is full');
      },
    };
    const service = createService({ store, logger });
    await service.refreshNow();
    assert.equal(service.current().fetchedAt, clock.now());
    assert.match(JSON.stringify(logger.warnings), /SQLITE_FULL/);
  });

  test('start() returns at once even when every provider hangs', async () => {
    for (const name of ['kraken', 'bitstamp', 'coinbase'] as const) fake.setMode(name, { kind: 'hang' });
    const service = createService({ providers: liveProviders(undefined, 5_000) });
    const started = performance.now();
    service.start();
    assert.ok(performance.now() - started < 50, 'start() blocked');
    assert.throws(() => service.current(), isRatesUnavailable);
    const stopping = performance.now();
    await service.stop(); // cancels the hung requests instead of waiting 5 s
    assert.ok(performance.now() - stopping < 1_000, 'stop() waited for the providers');
  });

  test('start() refreshes immediately, then every interval, and stop() ends it', async () => {
    fake.setPrice('kraken', '97000.00000');
    const service = createService({ providers: liveProviders('kraken'), refreshIntervalMs: 30 });
    const before = fake.requestCount('kraken');
    service.start();
    service.start(); // a second start must not run a second loop
    await service.refreshNow(); // joins the first refresh rather than starting another
    assert.equal(fake.requestCount('kraken'), before + 1);
    assert.equal(service.current().rateCentsPerBtc, 9_700_000);

    await waitFor(() => fake.requestCount('kraken') >= before + 4, 'three more background refreshes');
    await service.stop();
    const afterStop = fake.requestCount('kraken');
    await new Promise((resolve) => setTimeout(resolve, 120));
    assert.equal(fake.requestCount('kraken'), afterStop);
  });

  test('refreshNow() after stop() still works', async () => {
    const service = createService({ providers: liveProviders('kraken') });
    service.start();
    await service.stop();
    clock.advance(TEN_MINUTES + 1);
    await service.refreshNow();
    assert.equal(service.current().fetchedAt, clock.now());
  });

  test('a fixed rate is always fresh, needs no network and no store', async () => {
    const store = createMemoryStore({ rateCentsPerBtc: 9_700_000, source: 'kraken', fetchedAt: clock.now() });
    const service = createService({ providers: [createFixedProvider('65000.50')], store });
    assert.deepEqual(service.current(), { rateCentsPerBtc: 6_500_050, source: 'fixed', fetchedAt: clock.now() });
    service.start();
    await service.refreshNow();
    clock.advance(24 * 60 * 60_000);
    assert.deepEqual(service.current(), { rateCentsPerBtc: 6_500_050, source: 'fixed', fetchedAt: clock.now() });
    assert.deepEqual(store.saves, []);
  });

  test('refuses an empty provider list and fixed mixed with live sources', () => {
    assert.throws(() => new RateService({ providers: [], clock, store: createMemoryStore() }), /at least one rate source/);
    assert.throws(
      () => new RateService({ providers: [createFixedProvider('65000'), ...liveProviders('kraken')], clock, store: createMemoryStore() }),
      /cannot be combined/,
    );
  });
});
