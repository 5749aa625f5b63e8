// Every vendored vector: parse what a merchant pastes, derive the receive
// addresses, and refuse what must be refused without repeating it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveReceiveAddresses } from '../../../src/bitcoin/derive.ts';
import { parseWatchKey } from '../../../src/bitcoin/extended-key.ts';
import { deriveWithLibraries } from '../../../src/bitcoin/internal/library-derive.ts';
import { ApiError } from '../../../src/domain/errors.ts';
import { type InvalidCase, loadFixture, WATCH_KEY_FIXTURES } from './fixtures.ts';

function assertRefused(c: InvalidCase): void {
  assert.throws(
    () => parseWatchKey(c.input, c.network, { requireNetworkMatch: c.requireNetworkMatch }),
    (err: unknown) => {
      assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
      assert.equal(err.code, 'validation_error');
      assert.equal(err.status, 400);
      assert.deepEqual(err.extra, { param: 'xpub' });
      assert.match(err.message, new RegExp(c.error));
      // The input may be a secret: no part of it long enough to matter may come back.
      for (const token of c.input.split(/[^0-9A-Za-z]+/)) {
        if (token.length >= 8) assert.ok(!err.message.includes(token), `message repeats "${token}"`);
      }
      if (c.private) {
        assert.match(err.message, /PRIVATE key/);
        assert.match(err.message, /never needs a private key and has not stored it/);
      }
      return true;
    },
  );
}

for (const file of WATCH_KEY_FIXTURES) {
  const fixture = loadFixture(file);
  describe(file, () => {
    for (const c of fixture.valid) {
      test(`valid: ${c.description}`, () => {
        const key = parseWatchKey(c.input, c.network, { requireNetworkMatch: c.requireNetworkMatch });
        for (const [field, value] of Object.entries(c.expect)) {
          assert.deepEqual(key[field as keyof typeof key], value, field);
        }
        // The stored form must come back as the same key.
        assert.deepEqual(parseWatchKey(key.normalized, c.network, { requireNetworkMatch: c.requireNetworkMatch }), key);
        if (!c.addresses) return;
        const first = c.addresses[0]!.index;
        assert.deepEqual(c.addresses.map((a) => a.index), c.addresses.map((_, i) => first + i), 'fixture indexes are contiguous');
        assert.deepEqual(deriveReceiveAddresses(key, c.network, first, c.addresses.length), c.addresses);
        assert.deepEqual(deriveWithLibraries(key, c.network, first, c.addresses.length), c.addresses);
      });
    }
    for (const c of fixture.invalid) {
      test(`invalid: ${c.description}`, () => assertRefused(c));
    }
  });
}
