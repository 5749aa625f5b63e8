import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { signPayload, verifyWebhook, type VerifyFailure } from '../../../src/webhooks/signature.ts';
import { PREVIOUS_SECRET_VALIDITY_MS, validSecrets } from '../../../src/webhooks/secrets.ts';
import { CURRENT_SECRET, INVOICE_PAID_BODY, PREVIOUS_SECRET, T, T_MS, vectors } from './signature.fixtures.ts';

const BODY = INVOICE_PAID_BODY;
const [v1Current, v1Previous] = [vectors[0]!.v1, vectors[1]!.v1];
const ONE_SECRET = `t=${T},v1=${v1Current}`;
const TWO_SECRETS = `t=${T},v1=${v1Current},v1=${v1Previous}`;
const ONLY_PREVIOUS = `t=${T},v1=${v1Previous}`;

describe('signPayload', () => {
  for (const v of vectors) {
    test(`matches the OpenSSL vector: ${v.description}`, () => {
      assert.equal(signPayload(v.body, [v.secret], T), `t=${T},v1=${v.v1}`);
    });
  }

  test('signs once per secret, current first', () => {
    assert.equal(signPayload(BODY, [CURRENT_SECRET, PREVIOUS_SECRET], T), TWO_SECRETS);
  });

  test('refuses to sign without a secret or with a bad timestamp', () => {
    assert.throws(() => signPayload(BODY, [], T), TypeError);
    assert.throws(() => signPayload(BODY, [''], T), TypeError);
    assert.throws(() => signPayload(BODY, [CURRENT_SECRET], T + 0.5), RangeError);
    assert.throws(() => signPayload(BODY, [CURRENT_SECRET], -1), RangeError);
  });
});

interface Case {
  description: string;
  header: string | null | undefined;
  secrets: string[];
  now?: number;
  body?: string | Uint8Array;
}

const valid: Case[] = [
  { description: 'round trip with one secret', header: ONE_SECRET, secrets: [CURRENT_SECRET] },
  { description: 'body given as bytes', header: ONE_SECRET, secrets: [CURRENT_SECRET], body: new TextEncoder().encode(BODY) },
  { description: 'rotation: two v1, receiver already on the new secret', header: TWO_SECRETS, secrets: [CURRENT_SECRET] },
  { description: 'rotation: two v1, receiver still on the old secret', header: TWO_SECRETS, secrets: [PREVIOUS_SECRET] },
  { description: 'rotation: receiver holds both, sender signs with the new one only', header: ONE_SECRET, secrets: [PREVIOUS_SECRET, CURRENT_SECRET] },
  {
    description: 'previous secret still inside its 24 h',
    header: ONLY_PREVIOUS,
    secrets: validSecrets(CURRENT_SECRET, PREVIOUS_SECRET, T_MS + 1, T_MS),
  },
  { description: 'pairs in any order', header: `v1=${v1Current},t=${T}`, secrets: [CURRENT_SECRET] },
  { description: 'unknown keys (v0) ignored', header: `t=${T},v0=deadbeef,v1=${v1Current}`, secrets: [CURRENT_SECRET] },
  { description: 'spaces around pairs tolerated', header: `t=${T}, v1=${v1Current}`, secrets: [CURRENT_SECRET] },
  { description: 'a non-matching v1 next to a matching one', header: `t=${T},v1=${'0'.repeat(64)},v1=${v1Current}`, secrets: [CURRENT_SECRET] },
  { description: 'exactly 300 s old', header: ONE_SECRET, secrets: [CURRENT_SECRET], now: T_MS + 300_000 + 999 },
  { description: 'exactly 300 s in the future', header: ONE_SECRET, secrets: [CURRENT_SECRET], now: T_MS - 300_000 },
];

const invalid: (Case & { reason: VerifyFailure })[] = [
  { description: 'no header (null)', header: null, secrets: [CURRENT_SECRET], reason: 'missing_header' },
  { description: 'no header (undefined)', header: undefined, secrets: [CURRENT_SECRET], reason: 'missing_header' },
  { description: 'empty header', header: '', secrets: [CURRENT_SECRET], reason: 'missing_header' },
  { description: 'blank header', header: '  ', secrets: [CURRENT_SECRET], reason: 'missing_header' },
  { description: 'not key=value', header: 'garbage', secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'no t', header: `v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'empty t', header: `t=,v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'non-numeric t', header: `t=abc,v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 't with trailing letters', header: `t=${T}a,v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'negative t', header: `t=-${T},v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'fractional t', header: `t=${T}.5,v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 't too large for an integer', header: `t=9${'9'.repeat(20)},v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'no v1', header: `t=${T}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'only a v0', header: `t=${T},v0=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'duplicated t', header: `t=${T},t=${T},v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'malformed_header' },
  { description: 'tampered body', header: ONE_SECRET, secrets: [CURRENT_SECRET], body: BODY.replace('"amount_sats":21000', '"amount_sats":21001'), reason: 'no_matching_signature' },
  { description: 'body re-serialised after JSON.parse', header: ONE_SECRET, secrets: [CURRENT_SECRET], body: JSON.stringify(JSON.parse(BODY), null, 2), reason: 'no_matching_signature' },
  { description: 'body with a trailing newline', header: ONE_SECRET, secrets: [CURRENT_SECRET], body: BODY + '\n', reason: 'no_matching_signature' },
  { description: 'wrong secret', header: ONE_SECRET, secrets: [PREVIOUS_SECRET], reason: 'no_matching_signature' },
  { description: 'timestamp changed, signature kept', header: `t=${T + 1},v1=${v1Current}`, secrets: [CURRENT_SECRET], reason: 'no_matching_signature' },
  { description: 'upper-case hex', header: `t=${T},v1=${v1Current.toUpperCase()}`, secrets: [CURRENT_SECRET], reason: 'no_matching_signature' },
  { description: 'truncated signature', header: `t=${T},v1=${v1Current.slice(0, 63)}`, secrets: [CURRENT_SECRET], reason: 'no_matching_signature' },
  {
    description: 'previous secret after its 24 h: validSecrets leaves it out',
    header: ONLY_PREVIOUS,
    secrets: validSecrets(CURRENT_SECRET, PREVIOUS_SECRET, T_MS - PREVIOUS_SECRET_VALIDITY_MS, T_MS),
    reason: 'no_matching_signature',
  },
  { description: '301 s old', header: ONE_SECRET, secrets: [CURRENT_SECRET], now: T_MS + 301_000, reason: 'timestamp_outside_tolerance' },
  { description: '301 s in the future', header: ONE_SECRET, secrets: [CURRENT_SECRET], now: T_MS - 301_000, reason: 'timestamp_outside_tolerance' },
];

describe('verifyWebhook', () => {
  for (const c of valid) {
    test(`accepts: ${c.description}`, () => {
      const result = verifyWebhook(c.body ?? BODY, c.header, c.secrets, { now: c.now ?? T_MS });
      assert.deepEqual(result, { ok: true, timestamp: T });
    });
  }
  for (const c of invalid) {
    test(`rejects: ${c.description}`, () => {
      const result = verifyWebhook(c.body ?? BODY, c.header, c.secrets, { now: c.now ?? T_MS });
      assert.deepEqual(result, { ok: false, reason: c.reason });
    });
  }

  test('toleranceSeconds widens or narrows the window', () => {
    assert.equal(verifyWebhook(BODY, ONE_SECRET, [CURRENT_SECRET], { now: T_MS + 600_000, toleranceSeconds: 600 }).ok, true);
    assert.deepEqual(verifyWebhook(BODY, ONE_SECRET, [CURRENT_SECRET], { now: T_MS + 61_000, toleranceSeconds: 60 }), {
      ok: false,
      reason: 'timestamp_outside_tolerance',
    });
  });

  test('a caller mistake throws instead of rejecting every request quietly', () => {
    assert.throws(() => verifyWebhook(BODY, ONE_SECRET, [], { now: T_MS }), TypeError);
    assert.throws(() => verifyWebhook(BODY, ONE_SECRET, [''], { now: T_MS }), TypeError);
    assert.throws(() => verifyWebhook(BODY, ONE_SECRET, [CURRENT_SECRET], { now: T_MS, toleranceSeconds: -1 }), RangeError);
    assert.throws(() => verifyWebhook(BODY, ONE_SECRET, [CURRENT_SECRET], { now: Number.NaN }), RangeError);
  });
});

describe("Stripe's official Node SDK", () => {
  const stripe = new Stripe('sk_test_x');
  const signature = stripe.webhooks.signature;
  assert.ok(signature, 'stripe.webhooks.signature is present');
  const receivedAt = T_MS + 10_000;

  test('accepts a Till signature', () => {
    assert.equal(signature.verifyHeader(BODY, ONE_SECRET, CURRENT_SECRET, 300, undefined, receivedAt), true);
  });

  test('accepts a two-secret header with either secret', () => {
    assert.equal(signature.verifyHeader(BODY, TWO_SECRETS, CURRENT_SECRET, 300, undefined, receivedAt), true);
    assert.equal(signature.verifyHeader(BODY, TWO_SECRETS, PREVIOUS_SECRET, 300, undefined, receivedAt), true);
  });

  test('constructEvent hands back the Till event', () => {
    const event = stripe.webhooks.constructEvent(BODY, ONE_SECRET, CURRENT_SECRET, 300, undefined, receivedAt) as unknown as Record<string, unknown>;
    assert.equal(event.event_id, 'evt_01m7ys2b8scc5crd4eadq3t1wq');
    assert.equal(event.event_type, 'invoice.paid');
  });

  test('rejects a tampered body, so the checks above can fail', () => {
    assert.throws(
      () => signature.verifyHeader(BODY.replace('21000', '21001'), ONE_SECRET, CURRENT_SECRET, 300, undefined, receivedAt),
      { type: 'StripeSignatureVerificationError' },
    );
  });

  test("Till's verifier accepts a header Stripe generated", () => {
    const header = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret: CURRENT_SECRET, timestamp: T });
    assert.equal(header, ONE_SECRET);
    assert.deepEqual(verifyWebhook(BODY, header, [CURRENT_SECRET], { now: receivedAt }), { ok: true, timestamp: T });
  });
});
