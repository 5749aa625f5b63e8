import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addXpub } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call } from '../../helpers/till-server.ts';
import { createInvoice, getInvoice, mineAndSync, startChainFixture, waitFor } from './helpers.ts';
import { startFakeNode } from './nodes.ts';

// DESIGN "Gap limit": Till counts the run of handed-out indexes after the last
// funded one. A payment that was replaced (RBF double spend) never funded the
// address: a wallet scanning the chain never sees it.

test('a replaced payment does not count as funding for the gap limit', async (t) => {
  const f = await startChainFixture(t, startFakeNode);
  const { ctx } = f.till.rt;
  // gap_limit 6: one unfunded address may be handed out (run reaches 6 - 5 = 1).
  addXpub(ctx, { storeId: f.store.storeId, env: 'live', key: testTpub(f.store.storeId), gapLimit: 6 });

  const a = await createInvoice(f);
  const txA = await f.node.pay(a.address, 50_000, { rbf: true });
  await waitFor(async () => (await getInvoice(f, a.id)).payments.length === 1, 'a in mempool');
  await f.node.replace(txA, { outputs: [] });
  await waitFor(async () => (await getInvoice(f, a.id)).payments[0].status === 'replaced', 'a replaced');
  await mineAndSync(f);
  assert.equal((await getInvoice(f, a.id)).amount_received_sats, 0, 'index 0 holds nothing');

  f.till.clock.advance(25 * 3600_000); // past the 24 h funding window
  const b = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
  const x = ctx.repos.xpubs.findActive(f.store.storeId, 'live')!;
  assert.equal(b.status, 409, `index 0 was never funded (its only payment was replaced), yet a second unfunded address was handed out: ${b.status}; last_funded_index=${x.lastFundedIndex}`);
  assert.equal(b.body.error.code, 'gap_limit_exceeded');
});
