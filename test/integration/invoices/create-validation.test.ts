// POST /v1/invoices body rules (spec 2.1, 7.1, 8) over both transports: every
// refusal has the spec's status and code, names the field, and writes nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { call, setupStore, TRANSPORTS } from '../../helpers/till-server.ts';
import { assertError, assertInvoice, assertWritesNothing, countWrites, postInvoice, useTill } from './invoice-api.ts';

const CREATED_AT = Date.parse('2026-11-21T10:00:00.000Z'); // the ManualClock's start

interface Valid {
  name: string;
  body: Record<string, unknown>;
  expect: Record<string, unknown>;
  expiresInMinutes: number;
}

const fiftyKeys = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));

// Rate fixed:65000 => 6_500_000 cents per BTC.
const valid: Valid[] = [
  { name: 'sats', body: { amount_sats: 1000 }, expect: { amount_sats: 1000, amount: null, currency: null, rate: null }, expiresInMinutes: 30 },
  {
    name: 'fiat as a decimal string',
    body: { amount: '12.50', currency: 'USD' },
    // 1250 * 1e8 / 6_500_000 = 19230.77 -> 19231 (half up)
    expect: { amount_sats: 19231, amount: '12.50', currency: 'USD', rate: { usd_per_btc: '65000.00', source: 'fixed', fetched_at: '2026-11-21T10:00:00.000Z' } },
    expiresInMinutes: 30,
  },
  { name: 'fiat as a number, lower-case currency', body: { amount: 0.01, currency: 'usd' }, expect: { amount_sats: 15, amount: '0.01', currency: 'USD' }, expiresInMinutes: 30 },
  { name: 'shortest expiry', body: { amount_sats: 1, expires_in_minutes: 5 }, expect: { amount_sats: 1 }, expiresInMinutes: 5 },
  { name: 'longest expiry', body: { amount_sats: 1, expires_in_minutes: 120 }, expect: {}, expiresInMinutes: 120 },
  {
    name: 'callback_url and a 255-character metadata value',
    body: { amount_sats: 2100, callback_url: 'https://shop.example/hooks/till?x=1', metadata: { order: 'o'.repeat(255), note: 'ünïcødé' } },
    expect: { callback_url: 'https://shop.example/hooks/till?x=1', metadata: { order: 'o'.repeat(255), note: 'ünïcødé' } },
    expiresInMinutes: 30,
  },
  {
    name: 'a metadata key of 40 characters outside the BMP (80 UTF-16 units)',
    body: { amount_sats: 7, metadata: { ['🧾'.repeat(40)]: 'receipt' } },
    expect: { metadata: { ['🧾'.repeat(40)]: 'receipt' } },
    expiresInMinutes: 30,
  },
  { name: 'null optional fields count as absent', body: { amount_sats: 5, metadata: null, callback_url: null, amount: null, expires_in_minutes: null }, expect: { metadata: {}, callback_url: null }, expiresInMinutes: 30 },
  { name: 'amount_sats of exactly 21 million bitcoin', body: { amount_sats: 2_100_000_000_000_000 }, expect: { amount_sats: 2_100_000_000_000_000 }, expiresInMinutes: 30 },
  { name: 'metadata of 50 keys', body: { amount_sats: 1, metadata: fiftyKeys }, expect: { metadata: fiftyKeys }, expiresInMinutes: 30 },
];

interface Invalid {
  name: string;
  body: unknown;
  status: number;
  code: string;
  param: string;
  /** What the message says, where the same code and field could come from another check. */
  says?: RegExp;
}

const invalid: Invalid[] = [
  { name: 'neither amount_sats nor amount', body: {}, status: 400, code: 'validation_error', param: 'amount_sats', says: /amount_sats is required/ },
  { name: 'only metadata', body: { metadata: { a: 'b' } }, status: 400, code: 'validation_error', param: 'amount_sats' },
  { name: 'both amount_sats and amount+currency', body: { amount_sats: 1000, amount: '1.00', currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount_sats' },
  { name: 'amount_sats with currency', body: { amount_sats: 1000, currency: 'USD' }, status: 400, code: 'validation_error', param: 'currency' },
  { name: 'amount without currency', body: { amount: '1.00' }, status: 400, code: 'validation_error', param: 'currency', says: /currency is required/ },
  { name: 'currency without amount', body: { currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount', says: /amount is required/ },
  { name: 'expires_in_minutes 4', body: { amount_sats: 1, expires_in_minutes: 4 }, status: 400, code: 'validation_error', param: 'expires_in_minutes' },
  { name: 'expires_in_minutes 121', body: { amount_sats: 1, expires_in_minutes: 121 }, status: 400, code: 'validation_error', param: 'expires_in_minutes' },
  { name: 'expires_in_minutes not an integer', body: { amount_sats: 1, expires_in_minutes: 30.5 }, status: 400, code: 'validation_error', param: 'expires_in_minutes' },
  { name: 'expires_in_minutes as a string', body: { amount_sats: 1, expires_in_minutes: '30' }, status: 400, code: 'validation_error', param: 'expires_in_minutes' },
  { name: 'callback_url not a URL', body: { amount_sats: 1, callback_url: 'not a url' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url ftp', body: { amount_sats: 1, callback_url: 'ftp://shop.example/x' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url javascript:', body: { amount_sats: 1, callback_url: 'javascript:alert(1)' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url with a leading space', body: { amount_sats: 1, callback_url: ' https://shop.example/hook' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url a number', body: { amount_sats: 1, callback_url: 42 }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url with a password', body: { amount_sats: 1, callback_url: 'https://shop:secret@shop.example/hook' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'callback_url with a user name', body: { amount_sats: 1, callback_url: 'https://shop@shop.example/hook' }, status: 400, code: 'validation_error', param: 'callback_url' },
  { name: 'metadata value of 256 characters', body: { amount_sats: 1, metadata: { order: 'o'.repeat(256) } }, status: 400, code: 'validation_error', param: 'metadata.order' },
  { name: 'metadata a string', body: { amount_sats: 1, metadata: 'order=1' }, status: 400, code: 'validation_error', param: 'metadata' },
  { name: 'metadata an array', body: { amount_sats: 1, metadata: ['order'] }, status: 400, code: 'validation_error', param: 'metadata' },
  { name: 'metadata value a number', body: { amount_sats: 1, metadata: { order: 1 } }, status: 400, code: 'validation_error', param: 'metadata.order' },
  { name: 'metadata value an object', body: { amount_sats: 1, metadata: { order: { id: 1 } } }, status: 400, code: 'validation_error', param: 'metadata.order' },
  { name: 'metadata of 51 keys', body: { amount_sats: 1, metadata: { ...fiftyKeys, k50: 'v' } }, status: 400, code: 'validation_error', param: 'metadata', says: /at most 50 keys/ },
  { name: 'unknown field', body: { amount_sats: 1, amount_sat: 2 }, status: 400, code: 'validation_error', param: 'amount_sat', says: /^unknown field "amount_sat"$/ },
  { name: 'unknown field with a 5,000-character name: named by its first 64', body: { amount_sats: 1, ['x'.repeat(5000)]: 2 }, status: 400, code: 'validation_error', param: 'x'.repeat(64) },
  { name: 'metadata key of 41 characters: named by its first 40', body: { amount_sats: 1, metadata: { ['🧾'.repeat(41)]: 'receipt' } }, status: 400, code: 'validation_error', param: `metadata.${'🧾'.repeat(40)}…` },
  { name: 'metadata key empty', body: { amount_sats: 1, metadata: { '': 'receipt' } }, status: 400, code: 'validation_error', param: 'metadata' },
  { name: 'amount_sats as a string', body: { amount_sats: '1000' }, status: 400, code: 'validation_error', param: 'amount_sats' },
  { name: 'amount not a decimal', body: { amount: 'ten', currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount with 4 decimals', body: { amount: '0.0001', currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount with 3 decimals as a number', body: { amount: 12.345, currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount an exponent', body: { amount: 1e21, currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  // None of these is a price at all, so not a zero one either.
  { name: 'amount false', body: { amount: false, currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount an empty array', body: { amount: [], currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount ["-1"]', body: { amount: ['-1'], currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  // Not a decimal, so malformed, though Number() reads them as 0 and -1000.
  { name: 'amount "0x0"', body: { amount: '0x0', currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'amount "-1e3"', body: { amount: '-1e3', currency: 'USD' }, status: 400, code: 'validation_error', param: 'amount' },
  { name: 'currency EUR', body: { amount: '10.00', currency: 'EUR' }, status: 400, code: 'invalid_currency', param: 'currency' },
  { name: 'currency "uſd" (upper-cases to USD, is not USD)', body: { amount: '10.00', currency: 'uſd' }, status: 400, code: 'invalid_currency', param: 'currency' },
  { name: 'currency USDT', body: { amount: '10.00', currency: 'USDT' }, status: 400, code: 'invalid_currency', param: 'currency' },
  { name: 'currency AUSD', body: { amount: '10.00', currency: 'AUSD' }, status: 400, code: 'invalid_currency', param: 'currency' },
  { name: 'currency of 1,000 characters: quoted by its first 16', body: { amount: '10.00', currency: 'X'.repeat(1000) }, status: 400, code: 'invalid_currency', param: 'currency', says: /^currency "X{16}" is not supported/ },
  { name: 'currency not a string', body: { amount: '10.00', currency: 840 }, status: 400, code: 'validation_error', param: 'currency' },
  { name: 'amount_sats 0', body: { amount_sats: 0 }, status: 400, code: 'invalid_amount', param: 'amount_sats' },
  { name: 'amount_sats -1', body: { amount_sats: -1 }, status: 400, code: 'invalid_amount', param: 'amount_sats' },
  { name: 'amount_sats 1.5', body: { amount_sats: 1.5 }, status: 400, code: 'invalid_amount', param: 'amount_sats' },
  { name: 'amount_sats above 21 million BTC', body: { amount_sats: 2_100_000_000_000_001 }, status: 400, code: 'invalid_amount', param: 'amount_sats' },
  { name: 'amount_sats beyond 2^53', body: { amount_sats: 2 ** 53 + 2 }, status: 400, code: 'invalid_amount', param: 'amount_sats' },
  { name: 'amount "0"', body: { amount: '0', currency: 'USD' }, status: 400, code: 'invalid_amount', param: 'amount' },
  { name: 'amount 0.00', body: { amount: 0, currency: 'USD' }, status: 400, code: 'invalid_amount', param: 'amount' },
  { name: 'amount "-1.00"', body: { amount: '-1.00', currency: 'USD' }, status: 400, code: 'invalid_amount', param: 'amount' },
  { name: 'amount "-10.00"', body: { amount: '-10.00', currency: 'USD' }, status: 400, code: 'invalid_amount', param: 'amount' },
  { name: 'amount " -10.00 " (spaces around a negative)', body: { amount: ' -10.00 ', currency: 'USD' }, status: 400, code: 'invalid_amount', param: 'amount' },
];

for (const transport of TRANSPORTS) {
  describe(`POST /v1/invoices validation (${transport})`, () => {
    const till = useTill({ transport });
    let key = '';
    test('setup', () => {
      key = setupStore(till()).key;
    });

    for (const v of valid) {
      test(`valid: ${v.name}`, async () => {
        const before = countWrites(till());
        const inv = assertInvoice(await postInvoice(till(), key, v.body));
        for (const [field, value] of Object.entries(v.expect)) assert.deepEqual(inv[field], value, field);
        assert.equal(inv.status, 'pending');
        assert.equal(inv.livemode, false);
        assert.equal(inv.created_at, new Date(CREATED_AT).toISOString());
        assert.equal(inv.expires_at, new Date(CREATED_AT + v.expiresInMinutes * 60_000).toISOString());
        const after = countWrites(till());
        assert.equal(after.invoices, before.invoices + 1);
        assert.equal(after.indexesHandedOut, before.indexesHandedOut + 1);
      });
    }

    for (const c of invalid) {
      test(`invalid: ${c.name} -> ${c.status} ${c.code}`, async () => {
        const res = await assertWritesNothing(till(), () => postInvoice(till(), key, c.body));
        const error = assertError(res, c.status, c.code, c.param);
        if (c.says) assert.match(String(error.message), c.says);
      });
    }

    // Header values travel as bytes: a UTF-8 key is sent as its bytes, one latin1 char each.
    const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const idempotencyKeys = [
      { name: 'empty', value: '' },
      { name: '256 characters', value: 'k'.repeat(256) },
      { name: '256 characters in UTF-8', value: utf8('é'.repeat(256)) },
    ];
    for (const k of idempotencyKeys) {
      test(`Idempotency-Key ${k.name} -> 400 validation_error`, async () => {
        const res = await assertWritesNothing(till(), () => postInvoice(till(), key, { amount_sats: 1000 }, { 'idempotency-key': k.value }));
        assertError(res, 400, 'validation_error', 'Idempotency-Key');
      });
    }

    test('Idempotency-Key of 255 characters is accepted, also when they take 510 bytes', async () => {
      assertInvoice(await postInvoice(till(), key, { amount_sats: 1000 }, { 'idempotency-key': 'k'.repeat(255) }));
      assertInvoice(await postInvoice(till(), key, { amount_sats: 1000 }, { 'idempotency-key': utf8('é'.repeat(255)) }));
    });

    // JSON has no infinity, but 1e999 parses to one: beyond 21 million bitcoin (or below 1 sat) as any such number is.
    for (const [text, says] of [['1e999', /more than 21 million bitcoin/], ['-1e999', /greater than 0/]] as const) {
      test(`amount_sats ${text} -> 400 invalid_amount, as any amount out of range`, async () => {
        const res = await assertWritesNothing(till(), () => call(till(), 'POST', '/v1/invoices', { key, rawBody: `{"amount_sats": ${text}}`, headers: { 'content-type': 'application/json' } }));
        const error = assertError(res, 400, 'invalid_amount', 'amount_sats');
        assert.match(String(error.message), says);
      });
    }

    test('a field given as a query parameter is refused, not ignored', async () => {
      const res = await assertWritesNothing(till(), () => call(till(), 'POST', '/v1/invoices?expires_in_minutes=5', { key, body: { amount_sats: 1000 } }));
      const error = assertError(res, 400, 'validation_error', 'expires_in_minutes');
      assert.match(String(error.message), /unknown query parameter "expires_in_minutes"/);
    });
  });
}

describe('fiat amount that rounds to zero sats (socket)', () => {
  // USD 100,000,000 per BTC, the highest rate Till accepts: one sat is USD 1.00.
  const till = useTill({ env: { TILL_RATES: 'fixed:100000000' } });

  test('"0.01" and "0.49" -> 400 invalid_amount naming amount; "0.50" rounds up to 1 sat', async () => {
    const { key } = setupStore(till());
    for (const amount of ['0.01', '0.49']) {
      const res = await assertWritesNothing(till(), () => postInvoice(till(), key, { amount, currency: 'USD' }));
      const error = assertError(res, 400, 'invalid_amount', 'amount');
      assert.match(String(error.message), /zero sats/);
    }
    const inv = assertInvoice(await postInvoice(till(), key, { amount: '0.50', currency: 'USD' }));
    assert.equal(inv.amount_sats, 1);
  });
});
