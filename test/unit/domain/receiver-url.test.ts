// parseReceiverUrl: what an endpoint's url or an invoice's callback_url may be,
// and that what is stored is what was sent (normalised, never silently changed).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../../src/domain/errors.ts';
import { parseReceiverUrl, RECEIVER_URL_MAX_LENGTH } from '../../../src/domain/receiver-url.ts';

const valid: { input: string; stored: string; why: string }[] = [
  { input: 'https://shop.example/hooks/till?x=1', stored: 'https://shop.example/hooks/till?x=1', why: 'plain' },
  { input: 'HTTPS://Shop.Example', stored: 'https://shop.example/', why: 'scheme and host in capitals' },
  { input: 'http://127.0.0.1:8080/h', stored: 'http://127.0.0.1:8080/h', why: 'http with a port' },
  { input: 'https://shop.example/a%20b', stored: 'https://shop.example/a%20b', why: 'a space sent percent-encoded' },
];
const longest = `https://shop.example/${'a'.repeat(RECEIVER_URL_MAX_LENGTH - 21)}`;
valid.push({ input: longest, stored: longest, why: 'exactly the longest' });

const invalid: { input: unknown; why: string; message: RegExp }[] = [
  { input: ' https://shop.example/h', why: 'a leading space', message: /spaces or control characters/ },
  { input: 'https://shop.example/h ', why: 'a trailing space', message: /spaces or control characters/ },
  { input: 'https://shop.exa\nmple/h', why: 'a newline inside (the parser drops it)', message: /spaces or control characters/ },
  { input: 'https://shop.example/h\t', why: 'a tab', message: /spaces or control characters/ },
  { input: 'https://shop.example/h\u0000', why: 'a NUL', message: /spaces or control characters/ },
  { input: 'https://shop.example/a b', why: 'a space inside', message: /spaces or control characters/ },
  { input: 'https://shop.example/\u0085', why: 'a C1 control', message: /spaces or control characters/ },
  { input: `https://shop.example/${'a'.repeat(RECEIVER_URL_MAX_LENGTH - 20)}`, why: 'one character too long', message: /at most 2048 characters/ },
  { input: `https://shop.example/${'é'.repeat(1000)}`, why: 'under the limit as sent, over it percent-encoded', message: /at most 2048 characters/ },
  { input: 'ftp://shop.example/h', why: 'not http(s)', message: /absolute http\(s\) URL/ },
  { input: '/hooks/till', why: 'relative', message: /absolute http\(s\) URL/ },
  { input: 42, why: 'not a string', message: /absolute http\(s\) URL/ },
  { input: 'https://user:pw@shop.example/h', why: 'a password', message: /user name or password/ },
];

describe('parseReceiverUrl', () => {
  for (const { input, stored, why } of valid) {
    test(`takes ${why}`, () => assert.equal(parseReceiverUrl('url', input), stored));
  }
  for (const { input, why, message } of invalid) {
    test(`refuses ${why}`, () =>
      assert.throws(
        () => parseReceiverUrl('callback_url', input),
        (err: unknown) => err instanceof ApiError && err.code === 'validation_error' && err.extra.param === 'callback_url' && message.test(err.message),
      ));
  }
});
