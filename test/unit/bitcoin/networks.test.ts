import assert from 'node:assert/strict';
import { test } from 'node:test';
import { networks } from 'bitcoinjs-lib';
import { getNetwork, isTillNetwork, keyNetworkOf, TILL_NETWORKS } from '../../../src/bitcoin/networks.ts';

test('each Till network maps to its address prefixes', () => {
  assert.equal(getNetwork('main').bech32, 'bc');
  assert.equal(getNetwork('test').bech32, 'tb');
  assert.equal(getNetwork('regtest').bech32, 'bcrt');
  // Signet uses testnet's parameters.
  assert.deepEqual(getNetwork('signet'), networks.testnet);
  assert.equal(getNetwork('main').pubKeyHash, 0x00);
  assert.equal(getNetwork('regtest').scriptHash, 0xc4);
});

test('only mainnet uses mainnet keys', () => {
  assert.deepEqual(TILL_NETWORKS.map(keyNetworkOf), ['main', 'test', 'test', 'test']);
});

test('isTillNetwork accepts exactly the four names', () => {
  for (const name of TILL_NETWORKS) assert.ok(isTillNetwork(name));
  for (const other of ['mainnet', 'testnet4', '', 'MAIN', null, 1]) assert.ok(!isTillNetwork(other));
});
