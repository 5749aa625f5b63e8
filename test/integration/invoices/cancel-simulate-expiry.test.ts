// Cancel (spec 3.1), simulate (DESIGN "Simulate", the table in
// src/domain/simulate.ts) and expiry, checked through the API and the outbox
// rows each change writes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { silentLogger } from '../../../src/log.ts';
import { createRuntime } from '../../../src/runtime.ts';
import { expireDueInvoices } from '../../../src/services/invoices.ts';
import { call, setupStore, startTestTill, TRANSPORTS, type TestTill } from '../../helpers/till-server.ts';
import { assertError, assertInvoice, assertWritesNothing, postInvoice, useTill, type ApiResult } from './invoice-api.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The outbox rows of an invoice: types in order, each body checked against spec 6.2. */
function eventTypes(till: TestTill, invoiceId: string): string[] {
  const rows = till.rt.ctx.repos.events.listForInvoice(invoiceId);
  for (const row of rows) {
    const body = JSON.parse(row.body);
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'data', 'event_id', 'event_type', 'livemode']);
    assert.equal(body.event_id, row.id);
    assert.match(body.event_id, /^evt_/);
    assert.equal(body.event_type, row.type);
    assert.match(body.created_at, ISO_MS);
    assert.equal(body.livemode, row.livemode);
    assert.equal(body.data.invoice.object, 'invoice');
    assert.equal(body.data.invoice.id, invoiceId);
  }
  return rows.map((r) => r.type);
}

/** The invoice as carried by its latest event. */
function lastEventInvoice(till: TestTill, invoiceId: string): Record<string, unknown> {
  return JSON.parse(till.rt.ctx.repos.events.listForInvoice(invoiceId).at(-1)!.body).data.invoice;
}

function simulate(till: TestTill, key: string, id: string, event: string): Promise<ApiResult> {
  return call(till, 'POST', `/v1/invoices/${id}/simulate`, { key, body: { event } });
}

function cancel(till: TestTill, key: string, id: string): Promise<ApiResult> {
  return call(till, 'POST', `/v1/invoices/${id}/cancel`, { key });
}

for (const transport of TRANSPORTS) {
  describe(`cancel (${transport})`, () => {
    const till = useTill({ transport });

    test('pending -> cancelled with an invoice.cancelled event; a second cancel -> 409 invoice_not_cancellable', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      till().clock.advance(MINUTE);
      const res = await cancel(till(), s.key, inv.id);
      const cancelled = assertInvoice(res, 200);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(cancelled.cancelled_at, new Date(till().clock.now()).toISOString());
      assert.deepEqual(eventTypes(till(), inv.id), ['invoice.created', 'invoice.cancelled']);
      assert.deepEqual(lastEventInvoice(till(), inv.id), cancelled);
      assert.equal((await call(till(), 'GET', `/v1/invoices/${inv.id}`, { key: s.key })).text, res.text);
      const again = await assertWritesNothing(till(), () => cancel(till(), s.key, inv.id));
      assertError(again, 409, 'invoice_not_cancellable');
    });

    test('cancel takes no parameters: none, an empty body or {} cancels; a field, another type or bad JSON is refused, nothing written', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
      const path = `/v1/invoices/${inv.id}/cancel`;
      const json = { 'content-type': 'application/json' };
      for (const [opts, status, code, param, says] of [
        [{ body: { reason: 'out of stock' } }, 400, 'validation_error', 'reason', /^unknown field "reason"$/],
        [{ rawBody: 'hello', headers: { 'content-type': 'text/plain' } }, 415, 'unsupported_media_type', undefined, /Content-Type: application\/json/],
        [{ rawBody: '{bad', headers: json }, 400, 'validation_error', 'body', /not valid JSON/],
      ] as const) {
        const res = await assertWritesNothing(till(), () => call(till(), 'POST', path, { key: s.key, ...opts }));
        const error = assertError(res, status, code);
        assert.equal(error.param, param);
        assert.match(String(error.message), says);
      }
      for (const opts of [{ rawBody: '', headers: json }, { body: {} }, {}]) {
        const other = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
        assert.equal(assertInvoice(await call(till(), 'POST', `/v1/invoices/${other.id}/cancel`, { key: s.key, ...opts }), 200).status, 'cancelled');
      }
    });

    test('paid, late_paid and expired invoices -> 409 invoice_not_cancellable, nothing written', async () => {
      const s = setupStore(till());
      const make = async (event: string | null) => {
        const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000 }));
        if (event) assertInvoice(await simulate(till(), s.key, inv.id, event), 200);
        return inv.id as string;
      };
      const ids = { paid: await make('paid'), late_paid: await make('late_paid'), expired: await make('expired') };
      for (const [status, id] of Object.entries(ids)) {
        assert.equal((await call(till(), 'GET', `/v1/invoices/${id}`, { key: s.key })).body.status, status);
        const res = await assertWritesNothing(till(), () => cancel(till(), s.key, id));
        assert.match(String(assertError(res, 409, 'invoice_not_cancellable').message), new RegExp(status));
      }
    });

    test('a pending invoice past expires_at is expired, not cancellable, before the worker runs', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 1000, expires_in_minutes: 5 }));
      till().clock.advance(5 * MINUTE);
      const res = await assertWritesNothing(till(), () => cancel(till(), s.key, inv.id));
      assertError(res, 409, 'invoice_not_cancellable');
    });
  });

  describe(`simulate (${transport})`, () => {
    const till = useTill({ transport });
    let key = '';
    test('setup', () => {
      key = setupStore(till()).key;
    });

    async function invoiceIn(state: 'pending' | 'paid' | 'late_paid' | 'cancelled' | 'expired' | 'covered' | 'fully_expired' | 'overdue' | 'reversed'): Promise<string> {
      const inv = assertInvoice(await postInvoice(till(), key, { amount_sats: 5000, expires_in_minutes: 5 }));
      const id = inv.id as string;
      const step = async (event: string) => assertInvoice(await simulate(till(), key, id, event), 200);
      switch (state) {
        case 'pending':
          break;
        case 'paid':
        case 'late_paid':
        case 'expired':
          await step(state);
          break;
        case 'cancelled':
          assertInvoice(await cancel(till(), key, id), 200);
          break;
        case 'covered': // paid on time, waiting for its confirmation
          await step('payment_detected');
          break;
        case 'reversed': // paid, then its payment double-spent away
          await step('paid');
          await step('payment_reversed');
          break;
        case 'fully_expired':
          await step('expired');
          till().clock.advance(7 * DAY - 1000); // at the end of the default late window
          break;
        case 'overdue': // pending, past expires_at, the worker has not run
          till().clock.advance(5 * MINUTE);
          break;
      }
      till().clock.advance(1000); // the next call comes a moment later
      return id;
    }

    // Final status and the events the simulation adds, or the refusal.
    const cases: Array<{ from: Parameters<typeof invoiceIn>[0]; event: string; status?: string; events?: string[]; code?: string; http?: number }> = [
      { from: 'pending', event: 'payment_detected', status: 'pending', events: ['invoice.payment_detected'] },
      { from: 'pending', event: 'paid', status: 'paid', events: ['invoice.payment_detected', 'invoice.paid'] },
      { from: 'pending', event: 'expired', status: 'expired', events: ['invoice.expired'] },
      { from: 'pending', event: 'late_paid', status: 'late_paid', events: ['invoice.expired', 'invoice.payment_detected', 'invoice.late_paid'] },
      { from: 'covered', event: 'paid', status: 'paid', events: ['invoice.paid'] },
      { from: 'covered', event: 'expired', http: 409, code: 'invoice_already_paid' },
      { from: 'covered', event: 'late_paid', http: 409, code: 'invoice_already_paid' },
      { from: 'paid', event: 'paid', http: 409, code: 'invoice_already_paid' },
      { from: 'paid', event: 'expired', http: 409, code: 'invoice_already_paid' },
      { from: 'paid', event: 'late_paid', http: 409, code: 'invoice_already_paid' },
      { from: 'paid', event: 'payment_detected', status: 'paid', events: ['invoice.payment_detected'] },
      { from: 'late_paid', event: 'paid', http: 409, code: 'invoice_already_paid' },
      { from: 'cancelled', event: 'paid', http: 409, code: 'invoice_not_cancellable' },
      { from: 'cancelled', event: 'expired', http: 409, code: 'invoice_not_cancellable' },
      { from: 'cancelled', event: 'late_paid', http: 409, code: 'invoice_not_cancellable' },
      { from: 'cancelled', event: 'payment_detected', status: 'cancelled', events: ['invoice.payment_detected'] },
      { from: 'expired', event: 'paid', http: 410, code: 'invoice_expired' },
      { from: 'expired', event: 'expired', http: 410, code: 'invoice_expired' },
      { from: 'expired', event: 'late_paid', status: 'late_paid', events: ['invoice.payment_detected', 'invoice.late_paid'] },
      { from: 'expired', event: 'payment_detected', status: 'expired', events: ['invoice.payment_detected'] },
      { from: 'fully_expired', event: 'paid', http: 410, code: 'invoice_expired' },
      { from: 'fully_expired', event: 'late_paid', http: 410, code: 'invoice_expired' },
      { from: 'overdue', event: 'paid', http: 410, code: 'invoice_expired' },
      { from: 'paid', event: 'payment_reversed', status: 'paid', events: ['invoice.payment_reversed'] },
      { from: 'late_paid', event: 'payment_reversed', status: 'late_paid', events: ['invoice.payment_reversed'] },
      { from: 'paid', event: 'payment_restored', http: 409, code: 'invoice_already_paid' },
      { from: 'reversed', event: 'payment_restored', status: 'paid', events: ['invoice.payment_restored'] },
      { from: 'reversed', event: 'payment_reversed', http: 409, code: 'invoice_not_paid' },
      { from: 'reversed', event: 'paid', http: 409, code: 'invoice_already_paid' },
      { from: 'pending', event: 'payment_reversed', http: 409, code: 'invoice_not_paid' },
      { from: 'covered', event: 'payment_restored', http: 409, code: 'invoice_not_paid' },
      { from: 'cancelled', event: 'payment_reversed', http: 409, code: 'invoice_not_paid' },
      { from: 'expired', event: 'payment_restored', http: 409, code: 'invoice_not_paid' },
    ];
    for (const c of cases) {
      const outcome = c.code ? `${c.http} ${c.code}` : `${c.status} + ${c.events!.join(', ')}`;
      test(`${c.from} + ${c.event} -> ${outcome}`, async () => {
        const id = await invoiceIn(c.from);
        const before = eventTypes(till(), id);
        if (c.code) {
          const res = await assertWritesNothing(till(), () => simulate(till(), key, id, c.event));
          assertError(res, c.http!, c.code);
          return;
        }
        const inv = assertInvoice(await simulate(till(), key, id, c.event), 200);
        assert.equal(inv.status, c.status);
        assert.deepEqual(eventTypes(till(), id), [...before, ...c.events!]);
        assert.deepEqual(lastEventInvoice(till(), id), inv);
        if (c.event === 'payment_detected') assert.equal(inv.payments.at(-1).status, 'mempool');
        // Reversed, a paid invoice is held by nothing (still paid, since when it was); restored, by what it had.
        if (c.event === 'payment_reversed') assert.deepEqual([inv.amount_received_sats, inv.payments.map((p: any) => p.status)], [0, ['replaced']]);
        if (c.event === 'payment_restored') assert.deepEqual([inv.amount_confirmed_sats, inv.payments.map((p: any) => p.status)], [5000, ['confirmed']]);
        // Its webhook names the payment, as the chain's does (docs/WEBHOOKS.md: data.payment).
        if (c.event === 'payment_reversed' || c.event === 'payment_restored') {
          const body = JSON.parse(till().rt.ctx.repos.events.listForInvoice(id).at(-1)!.body);
          assert.deepEqual(body.data.payment, inv.payments[0]);
        }
        if (c.events!.includes(`invoice.${c.status}`) && (c.status === 'paid' || c.status === 'late_paid')) {
          assert.ok(inv.amount_confirmed_sats >= inv.amount_sats);
          assert.equal(inv.paid_at, new Date(till().clock.now()).toISOString());
          // docs/API.md: confirmed, and no block to name.
          assert.deepEqual([inv.payments.at(-1).status, inv.payments.at(-1).block_height], ['confirmed', null]);
        }
      });
    }

    test('payment_detected with amount_sats pays that: an underpaid invoice expires showing what it got; amount_sats goes with payment_detected only', async () => {
      const s = setupStore(till());
      const inv = assertInvoice(await postInvoice(till(), s.key, { amount_sats: 50_000 }));
      const path = `/v1/invoices/${inv.id}/simulate`;
      for (const [body, status, code] of [
        [{ event: 'paid', amount_sats: 1000 }, 400, 'validation_error'],
        [{ event: 'payment_detected', amount_sats: 0 }, 400, 'invalid_amount'],
        [{ event: 'payment_detected', amount_sats: 1.5 }, 400, 'invalid_amount'],
        [{ event: 'payment_detected', amount_sats: '1000' }, 400, 'validation_error'],
      ] as const) {
        const res = await assertWritesNothing(till(), () => call(till(), 'POST', path, { key: s.key, body }));
        assert.equal(assertError(res, status, code).param, 'amount_sats');
      }
      const partly = assertInvoice(await call(till(), 'POST', path, { key: s.key, body: { event: 'payment_detected', amount_sats: 20_000 } }), 200);
      assert.deepEqual([partly.status, partly.amount_received_sats], ['pending', 20_000]);
      const expired = assertInvoice(await simulate(till(), s.key, inv.id, 'expired'), 200);
      assert.deepEqual([expired.status, expired.amount_received_sats], ['expired', 20_000]);
    });

    test('a live invoice -> 403 test_mode_only; an unknown one -> 404', async () => {
      const live = setupStore(till(), { mode: 'live' });
      const inv = assertInvoice(await postInvoice(till(), live.key, { amount_sats: 1000 }));
      const res = await assertWritesNothing(till(), () => simulate(till(), live.key, inv.id, 'paid'));
      assertError(res, 403, 'test_mode_only');
      assertError(await simulate(till(), live.key, 'inv_00000000000000000000000000', 'paid'), 404, 'not_found');
      assert.equal((await call(till(), 'GET', `/v1/invoices/${inv.id}`, { key: live.key })).body.status, 'pending');
    });

    const badBodies: Array<{ name: string; body?: unknown; raw?: string; type?: string; http: number; code: string; param?: string; says?: RegExp }> = [
      { name: 'empty object', body: {}, http: 400, code: 'validation_error', param: 'event' },
      { name: 'unknown event', body: { event: 'refunded' }, http: 400, code: 'validation_error', param: 'event', says: /must be one of payment_detected, paid, late_paid, expired, payment_reversed, payment_restored$/ },
      { name: 'event with the invoice. prefix', body: { event: 'invoice.paid' }, http: 400, code: 'validation_error', param: 'event' },
      { name: 'event not a string', body: { event: 1 }, http: 400, code: 'validation_error', param: 'event' },
      { name: 'unknown field', body: { event: 'paid', reason: 'test' }, http: 400, code: 'validation_error', param: 'reason', says: /^unknown field "reason"$/ },
      { name: 'amount_sats with an event other than payment_detected', body: { event: 'paid', amount_sats: 1 }, http: 400, code: 'validation_error', param: 'amount_sats' },
      { name: 'array', body: ['paid'], http: 400, code: 'validation_error' },
      { name: 'not JSON', raw: 'event=paid', type: 'application/json', http: 400, code: 'validation_error' },
      { name: 'form encoded', raw: 'event=paid', type: 'application/x-www-form-urlencoded', http: 415, code: 'unsupported_media_type' },
      { name: 'no body', http: 415, code: 'unsupported_media_type' },
    ];
    for (const b of badBodies) {
      test(`bad body: ${b.name} -> ${b.http} ${b.code}`, async () => {
        const id = await invoiceIn('pending');
        const res = await assertWritesNothing(till(), () =>
          b.raw !== undefined
            ? call(till(), 'POST', `/v1/invoices/${id}/simulate`, { key, rawBody: b.raw, headers: { 'content-type': b.type! } })
            : call(till(), 'POST', `/v1/invoices/${id}/simulate`, { key, body: b.body }),
        );
        const error = assertError(res, b.http, b.code, b.param);
        if (b.says) assert.match(String(error.message), b.says);
      });
    }
  });
}

describe('expiry (socket)', () => {
  test('past expires_at, expireDueInvoices -> expired with an invoice.expired event; others untouched', async (t) => {
    const till = await startTestTill(t);
    const s = setupStore(till);
    const due = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000, expires_in_minutes: 5 }));
    const later = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000, expires_in_minutes: 6 }));
    const paid = assertInvoice(await postInvoice(till, s.key, { amount_sats: 1000, expires_in_minutes: 5 }));
    assertInvoice(await simulate(till, s.key, paid.id, 'paid'), 200);

    till.clock.advance(5 * MINUTE - 1);
    assert.equal(await expireDueInvoices(till.rt.ctx), 0);
    till.clock.advance(1 + 30_000); // the worker runs a little after expires_at
    assert.equal(await expireDueInvoices(till.rt.ctx), 1);
    assert.equal(await expireDueInvoices(till.rt.ctx), 0, 'a second run finds nothing');

    const expired = (await call(till, 'GET', `/v1/invoices/${due.id}`, { key: s.key })).body;
    assert.equal(expired.status, 'expired');
    // Expired by the rules at expires_at, not when the worker noticed.
    assert.equal(expired.expired_at, due.expires_at);
    assert.deepEqual(eventTypes(till, due.id), ['invoice.created', 'invoice.expired']);
    assert.deepEqual(lastEventInvoice(till, due.id), expired);
    assert.equal((await call(till, 'GET', `/v1/invoices/${later.id}`, { key: s.key })).body.status, 'pending');
    assert.equal((await call(till, 'GET', `/v1/invoices/${paid.id}`, { key: s.key })).body.status, 'paid');
    assert.deepEqual(eventTypes(till, paid.id), ['invoice.created', 'invoice.payment_detected', 'invoice.paid']);
    assertError(await cancel(till, s.key, due.id), 409, 'invoice_not_cancellable');
  });

  test('a restarted runtime on the same data dir expires what fell due while it was down', async (t) => {
    const till = await startTestTill(t);
    const test = setupStore(till);
    const live = setupStore(till, { mode: 'live' });
    const ids = [
      assertInvoice(await postInvoice(till, test.key, { amount_sats: 1000, expires_in_minutes: 5 })).id,
      assertInvoice(await postInvoice(till, live.key, { amount_sats: 1000, expires_in_minutes: 10 })).id,
    ];
    await till.rt.stop();

    till.clock.advance(60 * MINUTE);
    const restarted = createRuntime(till.config, { clock: till.clock, logger: silentLogger, expiryIntervalMs: 10 });
    t.after(() => restarted.stop());
    restarted.start();
    const statusOf = (id: string) => restarted.ctx.repos.invoices.get(id)!.status;
    for (let i = 0; i < 200 && ids.some((id) => statusOf(id) !== 'expired'); i++) await new Promise((r) => setTimeout(r, 10));
    for (const id of ids) {
      assert.equal(statusOf(id), 'expired');
      assert.deepEqual(restarted.ctx.repos.events.listForInvoice(id).map((e) => e.type), ['invoice.created', 'invoice.expired']);
    }
  });
});
