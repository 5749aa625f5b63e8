import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { defineChainScenarios } from './scenarios.ts';
import { startRealNode } from './nodes.ts';

// The same chain scenarios against a real `bitcoind -regtest`. No registry
// ships bitcoind, so this runs only when BITCOIND names a binary you built:
//   BITCOIND=/path/to/bitcoind node --test test/integration/chain/real-bitcoind.test.ts
const binary = process.env.BITCOIND;

if (binary && existsSync(binary)) {
  defineChainScenarios('real', (clock) => startRealNode(binary, clock));
} else {
  const reason = binary ? `BITCOIND=${binary} does not exist` : 'BITCOIND is not set (no bitcoind binary on this machine)';
  test(`chain scenarios against a real bitcoind -regtest: skipped, ${reason}`, { skip: reason }, () => {});
  console.log(`# real-bitcoind suite skipped: ${reason}`);
}
