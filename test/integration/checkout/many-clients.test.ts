import assert from 'node:assert/strict';
import { get, type ClientRequest } from 'node:http';
import { test } from 'node:test';
import { setupStore, startTestTill } from '../../helpers/till-server.ts';
import { createInvoice, simulate } from './checkout-helpers.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const CLIENTS = 1000;

/** One SSE client on its own socket: the statuses it received, in order, and whether the server ended it. */
function openClient(url: string) {
  const statuses: string[] = [];
  let ended = false;
  let buffer = '';
  const ready = new Promise<ClientRequest>((resolve, reject) => {
    const req = get(url, { agent: false }, (res) => {
      assert.equal(res.statusCode, 200);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const data = buffer.slice(0, cut).split('\n').find((l) => l.startsWith('data: '));
          if (data) statuses.push(JSON.parse(data.slice(6)).status);
          buffer = buffer.slice(cut + 2);
        }
      });
      res.on('end', () => (ended = true));
      resolve(req);
    });
    req.on('error', reject);
  });
  return { ready, statuses, get ended() { return ended; } };
}

test(`${CLIENTS} concurrent SSE clients on one invoice all receive the paid event`, { timeout: 20_000 }, async (t) => {
  const till = await startTestTill(t, { env: { TILL_MAX_STREAMS_PER_CLIENT: String(CLIENTS) } });
  const store = setupStore(till);
  const inv = await createInvoice(till, store);
  const url = `${till.url}/pay/invoices/${inv.id}/events`;

  const clients = Array.from({ length: CLIENTS }, () => openClient(url));
  const requests = await Promise.all(clients.map((c) => c.ready));
  t.after(() => requests.forEach((r) => r.destroy()));
  await waitFor(() => clients.every((c) => c.statuses.length === 1), 'every snapshot', 10_000);
  assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), CLIENTS);

  const started = performance.now();
  await simulate(till, store, inv.id, 'paid');
  await waitFor(() => clients.every((c) => c.statuses.length === 2), 'the paid event at every client', 10_000);
  const fanOutMs = performance.now() - started;
  t.diagnostic(`paid reached ${CLIENTS} SSE clients in ${fanOutMs.toFixed(0)} ms`);

  for (const c of clients) assert.deepEqual(c.statuses, ['pending', 'paid']);
  await waitFor(() => clients.every((c) => c.ended), 'every stream to end', 5000);
  assert.equal(till.rt.ctx.feed.subscriberCount(inv.id), 0);
});
