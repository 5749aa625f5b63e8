// GET /healthz answers 200 "ok" exactly when Till can make and follow every
// kind of invoice: a monitor must not hear "ok" while writes or live invoices
// are refused, nor "degraded" while a till in step reads its next block.
import assert from 'node:assert/strict';
import { statfsSync } from 'node:fs';
import { createServer } from 'node:http';
import { describe, test } from 'node:test';
import { ManualClock } from '../../../src/clock.ts';
import { listenOnLoopback } from '../../helpers/listen.ts';
import { addXpub } from '../../../src/services/xpubs.ts';
import { testTpub } from '../../helpers/keys.ts';
import { call, setupStore, startTestTill } from '../../helpers/till-server.ts';
import { nodeEnv, startChainFixture, startWatching } from '../chain/helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeNode } from '../chain/nodes.ts';

describe('GET /healthz', () => {
  test('bitcoind in initial block download: degraded (503), as live invoices are refused with chain_syncing', async (t) => {
    const f = await startChainFixture(t, startFakeNode);
    assert.equal((await call(f.till, 'GET', '/healthz')).status, 200);
    f.node.fake!.setIbd(true);
    await f.till.rt.chain!.requestSync(false, 'test');
    const created = await call(f.till, 'POST', '/v1/invoices', { key: f.store.key, body: { amount_sats: 1000 } });
    assert.equal(created.body.error.code, 'chain_syncing');
    const health = await call(f.till, 'GET', '/healthz');
    assert.equal(health.status, 503);
    assert.equal(health.body.status, 'degraded');
    assert.equal(health.body.chain.initial_block_download, true);
  });

  test('a till in step stays ok (200) while a routine re-sync reads its next block', async (t) => {
    const clock = new ManualClock(Date.now());
    const node = await startFakeNode(clock);
    t.after(() => node.stop());
    // An RPC proxy in front of the node that holds getblock answers while asked to (a slow node).
    let hold = false;
    const held: Array<() => void> = [];
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString();
        if (hold && body.includes('"getblock"')) await new Promise<void>((r) => held.push(r));
        try {
          const answer = await fetch(node.rpcUrl, { method: 'POST', headers: { authorization: String(req.headers.authorization), 'content-type': 'application/json' }, body });
          res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
        } catch {
          // A request let go as the test ends, when the node may already be stopped.
          res.destroy();
        }
      });
    });
    const rpcUrl = await listenOnLoopback(proxy);
    t.after(() => {
      held.splice(0).forEach((r) => r());
      proxy.closeAllConnections();
      proxy.close();
    });
    const till = await startTestTill(t, { clock, env: nodeEnv({ ...node, rpcUrl }), chainResyncMs: 3_600_000 });
    setupStore(till, { mode: 'live' });
    await startWatching(till, node);
    assert.equal((await call(till, 'GET', '/healthz')).status, 200);

    hold = true;
    await node.mine(1);
    await waitFor(() => held.length > 0, 'the next block asked for');
    const during = await call(till, 'GET', '/healthz');
    hold = false;
    held.splice(0).forEach((r) => r());
    await till.rt.chain!.idle();
    assert.equal(during.status, 200, during.text);
    assert.equal(during.body.chain.status, 'synced');
  });

  test('below min_free_disk_mb: degraded (503) with database.status disk_full, as every write is refused', async (t) => {
    const probe = await startTestTill(t);
    const { bavail, bsize } = statfsSync(probe.config.dataDir);
    const floorMb = Math.ceil((bavail * bsize) / 2 ** 20) + 1024;
    const till = await startTestTill(t, { env: { TILL_MIN_FREE_DISK_MB: String(floorMb) } });
    const created = await call(till, 'POST', '/v1/invoices', { key: setupStore(till).key, body: { amount_sats: 1000 } });
    assert.equal(created.body.error.code, 'disk_full');
    const health = await call(till, 'GET', '/healthz');
    assert.equal(health.status, 503);
    assert.equal(health.body.status, 'degraded');
    assert.equal(health.body.database.status, 'disk_full');
    assert.match(health.body.database.error, /MB free/);
    assert.equal((await call(probe, 'GET', '/healthz')).body.database.status, 'ok', 'with room above the floor');
  });

  test('shows how close the live keys are to their gap limits; one at its limit leaves status ok (it is the wallet\'s setting)', async (t) => {
    const till = await startTestTill(t);
    const store = setupStore(till, { mode: 'live' });
    assert.deepEqual((await call(till, 'GET', '/healthz')).body.gap_limit.at_limit, []);
    const { xpub } = addXpub(till.rt.ctx, { storeId: store.storeId, env: 'live', key: testTpub('health-gap'), gapLimit: 6 });
    assert.equal((await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 1000 } })).status, 201);
    const refused = await call(till, 'POST', '/v1/invoices', { key: store.key, body: { amount_sats: 1000 } });
    assert.equal(refused.body.error.code, 'gap_limit_exceeded');
    const health = await call(till, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body.gap_limit, { at_limit: [xpub.id], lowest_headroom: 0 });
  });
});

