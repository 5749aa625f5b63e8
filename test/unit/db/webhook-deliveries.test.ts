import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { setupStore, startTestTill } from '../../helpers/till-server.ts';

// The delivery worker's full pump asks which receivers (targets) have a due
// delivery it does not have under way, longest due first: one row each below,
// with the ids it holds left out.

test('dueTargets: targets with a due delivery not under way, the longest due first, within the limit', async (t) => {
  const till = await startTestTill(t);
  const { ctx } = till.rt;
  const { storeId } = setupStore(till);
  const now = ctx.clock.now();
  const ids = new Map<string, string>();
  /** One delivery to `target` due at now + `dueIn` ms, named `name`. */
  const add = (name: string, target: string, dueIn: number) => {
    const eventId = newId('evt', now);
    ctx.repos.events.insert({ id: eventId, type: 'invoice.created', storeId, invoiceId: null, livemode: false, createdAt: now, body: '{}' });
    const id = newId('dlv', now);
    assert.ok(ctx.repos.webhookDeliveries.insert({ id, eventId, storeId, endpointId: null, target, url: `https://${target}.example/`, nextAttemptAt: now + dueIn, createdAt: now }));
    ids.set(name, id);
  };
  add('a-held', 'callback:a', -3000);
  add('a', 'callback:a', -1000);
  add('b', 'callback:b', -2000);
  add('c-later', 'callback:c', 5000);
  add('d-held', 'callback:d', -4000);
  const held = ['a-held', 'd-held'].map((name) => ids.get(name)!);
  const repo = ctx.repos.webhookDeliveries;

  assert.deepEqual(repo.dueTargets(now, 100), ['callback:d', 'callback:a', 'callback:b'], 'nothing under way: by their earliest due row');
  assert.deepEqual(repo.dueTargets(now, 100, held), ['callback:b', 'callback:a'], 'd has nothing else due; a is due from its second row');
  assert.deepEqual(repo.dueTargets(now, 1, held), ['callback:b']);
  assert.deepEqual(repo.dueTargets(now + 5000, 100, held), ['callback:b', 'callback:a', 'callback:c'], 'c once its time comes');
  assert.deepEqual(repo.dueTargets(now - 10_000, 100), [], 'nothing due yet');
});
