import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateWebhookSecret, PREVIOUS_SECRET_VALIDITY_MS, rotateWebhookSecret, validSecrets } from '../../../src/webhooks/secrets.ts';

const NOW = Date.parse('2026-11-21T10:00:00.000Z');
const DAY = 24 * 60 * 60 * 1000;

describe('generateWebhookSecret', () => {
  test('whsec_ followed by 43 base62 characters, different every time', () => {
    const secrets = new Set(Array.from({ length: 200 }, () => generateWebhookSecret()));
    assert.equal(secrets.size, 200);
    for (const s of secrets) assert.match(s, /^whsec_[0-9A-Za-z]{43}$/);
  });

  test('uses the whole alphabet (no stuck or missing characters)', () => {
    const seen = new Set(Array.from({ length: 200 }, () => generateWebhookSecret().slice(6)).join(''));
    assert.equal(seen.size, 62);
  });
});

describe('validSecrets', () => {
  const valid: { description: string; args: Parameters<typeof validSecrets>; expected: string[] }[] = [
    { description: 'no rotation yet', args: ['new', null, null, NOW], expected: ['new'] },
    { description: 'just rotated', args: ['new', 'old', NOW + DAY, NOW], expected: ['new', 'old'] },
    { description: '1 ms before the 24 h end', args: ['new', 'old', NOW + 1, NOW], expected: ['new', 'old'] },
    { description: 'exactly at the 24 h end', args: ['new', 'old', NOW, NOW], expected: ['new'] },
    { description: 'after the 24 h end', args: ['new', 'old', NOW - 1, NOW], expected: ['new'] },
    { description: 'previous without an expiry is not valid', args: ['new', 'old', null, NOW], expected: ['new'] },
    { description: 'previous equal to current is listed once', args: ['same', 'same', NOW + DAY, NOW], expected: ['same'] },
  ];
  for (const v of valid) {
    test(v.description, () => assert.deepEqual(validSecrets(...v.args), v.expected));
  }
});

describe('rotateWebhookSecret', () => {
  test('new secret signs, the old one stays valid for exactly 24 h', () => {
    const rotated = rotateWebhookSecret('whsec_old', NOW);
    assert.equal(PREVIOUS_SECRET_VALIDITY_MS, DAY);
    assert.match(rotated.secret, /^whsec_[0-9A-Za-z]{43}$/);
    assert.deepEqual(rotated, { secret: rotated.secret, previousSecret: 'whsec_old', previousSecretExpiresAt: NOW + DAY });
    const at = (ms: number) => validSecrets(rotated.secret, rotated.previousSecret, rotated.previousSecretExpiresAt, ms);
    assert.deepEqual(at(NOW + DAY - 1), [rotated.secret, 'whsec_old']);
    assert.deepEqual(at(NOW + DAY), [rotated.secret]);
  });

  test('a current secret that cannot be read (null) leaves no previous one', () => {
    const rotated = rotateWebhookSecret(null, NOW);
    assert.deepEqual(rotated, { secret: rotated.secret, previousSecret: null, previousSecretExpiresAt: null });
  });
});
