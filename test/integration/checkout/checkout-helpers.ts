import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Payment } from '../../../src/domain/invoice.ts';
import { transition } from '../../../src/domain/invoice-state.ts';
import { saveTransition } from '../../../src/services/invoices.ts';
import { call, type TestStore, type TestTill } from '../../helpers/till-server.ts';
import { SseReader } from './sse-reader.ts';

/** Creates a test-mode invoice through the API; returns its public view. */
export async function createInvoice(till: TestTill, store: TestStore, body: Record<string, unknown> = { amount_sats: 10_000 }): Promise<any> {
  const res = await call(till, 'POST', '/v1/invoices', { key: store.key, body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** Fires a simulated lifecycle event (POST /v1/invoices/:id/simulate) and expects it to succeed. */
export async function simulate(till: TestTill, store: TestStore, id: string, event: string): Promise<any> {
  const res = await call(till, 'POST', `/v1/invoices/${id}/simulate`, { key: store.key, body: { event } });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Opens the invoice's SSE stream; the reader is closed when the test ends. */
export async function openEvents(
  till: TestTill,
  t: { after(fn: () => void): void },
  id: string,
  headers: Record<string, string> = {},
): Promise<{ res: Response; reader: SseReader }> {
  const abort = new AbortController();
  const res = await till.request(`/pay/invoices/${id}/events`, { headers, signal: abort.signal });
  assert.equal(res.status, 200, `SSE open answered ${res.status}`);
  const reader = new SseReader(res, abort);
  t.after(() => reader.close());
  return { res, reader };
}

/** Resolves with the value, or rejects after ms: bounds every wait on the network. */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]);
}

/**
 * Records a payment of `amountSats` seen in the mempool, the way the chain
 * watcher does: the payments fact through the state machine, saved and
 * published in one go. Simulate can only pay what is missing; this can pay less.
 * `coinbaseConfirmations`: a coinbase output that many blocks deep instead of a
 * mempool payment.
 */
export async function receivePayment(till: TestTill, id: string, amountSats: number, txidByte = 'ab', opts: { coinbaseConfirmations?: number } = {}): Promise<void> {
  const now = till.rt.ctx.clock.now();
  const unconfirmed = { status: 'mempool' as const, confirmations: 0, blockHeight: null, coinbase: false };
  // A miner's payment: in a block from the start.
  const mined = opts.coinbaseConfirmations ? { status: 'confirmed' as const, confirmations: opts.coinbaseConfirmations, blockHeight: 200, coinbase: true } : unconfirmed;
  await changePayments(till, id, (payments) => [...payments, { txid: txidByte.repeat(32), vout: 0, amountSats, ...mined, firstSeenAt: now }]);
}

/** Runs the invoice's payments, as `change` makes them, through the state machine as the chain watcher would, and publishes the result. */
export async function changePayments(till: TestTill, id: string, change: (payments: Payment[]) => Payment[]): Promise<void> {
  const { ctx } = till.rt;
  const saved = await ctx.writes.run(() => {
    const before = ctx.repos.invoices.get(id);
    assert.ok(before, `invoice ${id}`);
    const { invoice, events } = transition(before, { kind: 'payments', payments: change(before.payments) }, ctx.clock.now());
    return saveTransition(ctx, before, invoice, events);
  });
  ctx.feed.publish(saved);
}

/** A checkout WebSocket whose messages (parsed JSON) are read in order with next(). */
export function openSocket(t: TestContext, url: string) {
  const ws = new WebSocket(url);
  const queue: any[] = [];
  let wake: (() => void) | null = null;
  ws.addEventListener('message', (e) => {
    queue.push(JSON.parse(String(e.data)));
    wake?.();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener('close', (e) => resolve({ code: e.code, reason: e.reason })));
  t.after(() => ws.close());
  return {
    ws,
    closed,
    opened: new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error('WebSocket failed to open')));
    }),
    async next(timeoutMs = 3000): Promise<any> {
      const deadline = Date.now() + timeoutMs;
      while (queue.length === 0) {
        if (Date.now() > deadline) throw new Error(`no WebSocket message within ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          const timer = setTimeout(r, 20);
          wake = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
      return queue.shift();
    },
  };
}
