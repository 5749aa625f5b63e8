import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findDuplicateKey } from '../../../src/http/internal/duplicate-key.ts';

describe('findDuplicateKey', () => {
  const valid: { json: string; why: string }[] = [
    { json: '{}', why: 'empty' },
    { json: '{"amount_sats":1000}', why: 'one field' },
    { json: '{"a":1,"b":{"a":2}}', why: 'one name at two levels' },
    { json: '{"a":{"x":1},"b":{"x":2}}', why: 'one name in two sibling objects' },
    { json: '{"a":[{"x":1},{"x":2}]}', why: 'one name in two objects of an array' },
    { json: '{"a":"a","b":"a"}', why: 'a value equal to a name' },
    { json: '{"a":"x\\":y","x":1}', why: 'an escaped quote and a colon inside a value' },
    { json: '{"k\\"":1,"k":2}', why: 'names that differ by an escaped quote' },
    { json: '{"metadata":{"order":"1","Order":"2"}}', why: 'names differing in case' },
    { json: ' { "a" : 1 , "b" : [ "a" , "a" ] } ', why: 'whitespace, repeated array strings' },
  ];
  for (const { json, why } of valid) {
    test(`none: ${why}`, () => {
      assert.equal(findDuplicateKey(json), null);
    });
  }

  const invalid: { json: string; path: string; why: string }[] = [
    { json: '{"amount_sats":100,"amount_sats":200}', path: 'amount_sats', why: 'a field twice' },
    { json: '{"amount_sats":100,"amount\\u005fsats":200}', path: 'amount_sats', why: 'the second written with an escape' },
    { json: '{"metadata":{"order":"1","order":"2"}}', path: 'metadata.order', why: 'a metadata key twice' },
    { json: '{"a":[{"x":1,"x":2}]}', path: 'a.x', why: 'inside an array' },
    { json: '{"a" : 1,\n "a"\t: 2}', path: 'a', why: 'with whitespace around the colon' },
    { json: '{"":1,"":2}', path: '', why: 'the empty name' },
  ];
  for (const { json, path, why } of invalid) {
    test(`found: ${why}`, () => {
      JSON.parse(json); // the inputs are valid JSON, as the function requires
      assert.equal(findDuplicateKey(json), path);
    });
  }
});
