import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newId } from '../../../src/ids.ts';
import { capturedLogger } from '../../helpers/captured-log.ts';
import { createInvoice, restartTill, startChainFixture } from './helpers.ts';
import { startFakeNode } from './nodes.ts';

// No unique index stops one address being handed out twice (migration 0013:
// it holds by construction). Were a bug ever to break that, the chain watcher
// would credit a payment to both invoices; it says so where an operator looks.

test('an address handed out twice is logged as an error naming both invoices, and again at each start; new addresses log nothing', async (t) => {
  const { logger, lines } = capturedLogger();
  const f = await startChainFixture(t, startFakeNode, { logger });
  const { ctx } = f.till.rt;
  const first = await createInvoice(f);
  await createInvoice(f);
  const sharedAddress = () => lines.filter((l) => l.level === 50 && /have the same address/.test(String(l.msg)));
  assert.deepEqual(sharedAddress(), []);

  // What such a bug would write: another invoice with the first one's address.
  const { rowid: _, ...stored } = ctx.repos.invoices.get(first.id)!;
  const twin = { ...stored, id: newId('inv', f.till.clock.now()), addressIndex: stored.addressIndex + 7 };
  ctx.feed.publish({ ...twin, rowid: ctx.repos.invoices.insert(twin) });
  assert.deepEqual(sharedAddress().map((l) => [l.invoice_id, l.other_invoice_id, l.address]), [[twin.id, first.id, first.address]]);
  assert.match(String(sharedAddress()[0]!.msg), /a payment to it counts for both\. Till hands out each address once, so this is a bug/);

  // Said again at every start, while both are watched.
  await f.till.rt.stop();
  const { logger: logger2, lines: lines2 } = capturedLogger();
  const rt = restartTill(t, f, { logger: logger2 });
  rt.chain!.start();
  await rt.chain!.idle();
  const atStart = lines2.filter((l) => l.level === 50 && /have the same address/.test(String(l.msg)));
  assert.deepEqual(atStart.map((l) => [l.invoice_id, l.other_invoice_id]), [[twin.id, first.id]]);
});
