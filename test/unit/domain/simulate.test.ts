import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError, type ErrorCode } from '../../../src/domain/errors.ts';
import { amountReceived } from '../../../src/domain/invoice-amounts.ts';
import type { Invoice, InvoiceStatus } from '../../../src/domain/invoice.ts';
import { transition, type Transition } from '../../../src/domain/invoice-state.ts';
import { SIMULATED_EVENTS, simulate, type SimulatedEvent } from '../../../src/domain/simulate.ts';
import { syntheticTxid } from '../../../src/domain/synthetic-payment.ts';
import {
  AMOUNT,
  CANCELLED,
  DAY,
  EXPIRED,
  EXPIRES,
  HOUR,
  LATE_PAID,
  LATE_WINDOW,
  MINUTE,
  PAID,
  T0,
  coinbase,
  confirmed,
  deepFreeze,
  describeEvents,
  makeInvoice,
  mempool,
  nameTxid,
  replaced,
} from './invoice.fixtures.ts';

// Synthetic txids show as 'sim<n>' (the n-th simulated payment of the invoice).
function nameSynthetic(invoice: Invoice): (txid: string) => string | undefined {
  return (value) => {
    for (let n = 0; n < 10; n++) if (syntheticTxid(invoice.id, n) === value) return `sim${n}`;
    return undefined;
  };
}

function describePayments(result: Transition): string[] {
  const name = nameSynthetic(result.invoice);
  return result.invoice.payments.map(
    (p) => `${nameTxid(p.txid, name)}:${p.amountSats}:${p.status}:${p.confirmations}`,
  );
}

type Outcome =
  | { status: InvoiceStatus; events: string[]; payments: string[] }
  | { error: ErrorCode; httpStatus: number };

interface Row {
  name: string;
  invoice: Invoice;
  now: number;
  outcomes: Record<SimulatedEvent, Outcome>;
}

const already = { error: 'invoice_already_paid', httpStatus: 409 } as const;
const gone = { error: 'invoice_expired', httpStatus: 410 } as const;
const final = { error: 'invoice_not_cancellable', httpStatus: 409 } as const;
const notPaid = { error: 'invoice_not_paid', httpStatus: 409 } as const;
/** PAID after a double spend took its payment: still paid, held by nothing. */
const REVERSED = makeInvoice({ status: 'paid', paidAt: T0 + 10 * MINUTE, payments: [replaced('a', AMOUNT, T0 + MINUTE)] });

// Every simulate event on every status the invoice can be in.
const rows: Row[] = [
  {
    name: 'pending',
    invoice: makeInvoice(),
    now: T0 + 5 * MINUTE,
    outcomes: {
      payment_detected: { status: 'pending', events: ['payment_detected:sim0'], payments: ['sim0:100000:mempool:0'] },
      paid: { status: 'paid', events: ['payment_detected:sim0', 'paid'], payments: ['sim0:100000:confirmed:1'] },
      expired: { status: 'expired', events: ['expired'], payments: [] },
      late_paid: { status: 'late_paid', events: ['expired', 'payment_detected:sim0', 'late_paid'], payments: ['sim0:100000:confirmed:1'] },
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'pending, partly paid',
    invoice: makeInvoice({ payments: [mempool('a', 30_000, T0 + MINUTE)] }),
    now: T0 + 5 * MINUTE,
    outcomes: {
      payment_detected: { status: 'pending', events: ['payment_detected:sim1'], payments: ['a:30000:mempool:0', 'sim1:70000:mempool:0'] },
      paid: { status: 'paid', events: ['payment_detected:sim1', 'paid'], payments: ['a:30000:confirmed:1', 'sim1:70000:confirmed:1'] },
      expired: { status: 'expired', events: ['expired'], payments: ['a:30000:mempool:0'] },
      late_paid: { status: 'late_paid', events: ['expired', 'payment_detected:sim1', 'late_paid'], payments: ['a:30000:confirmed:1', 'sim1:70000:confirmed:1'] },
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'pending past expires_at (expiry not applied yet)',
    invoice: makeInvoice(),
    now: EXPIRES + MINUTE,
    outcomes: {
      payment_detected: { status: 'expired', events: ['payment_detected:sim0', 'expired'], payments: ['sim0:100000:mempool:0'] },
      paid: gone,
      expired: { status: 'expired', events: ['expired'], payments: [] },
      late_paid: { status: 'late_paid', events: ['expired', 'payment_detected:sim0', 'late_paid'], payments: ['sim0:100000:confirmed:1'] },
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'pending, waiting past expiry for on-time payments to confirm',
    invoice: makeInvoice({ payments: [mempool('a', AMOUNT, EXPIRES - MINUTE)] }),
    now: EXPIRES + MINUTE,
    outcomes: {
      payment_detected: { status: 'pending', events: ['payment_detected:sim1'], payments: ['a:100000:mempool:0', 'sim1:100000:mempool:0'] },
      paid: { status: 'paid', events: ['paid'], payments: ['a:100000:confirmed:1'] },
      expired: already,
      late_paid: already,
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'paid',
    invoice: PAID,
    now: EXPIRES + DAY,
    outcomes: {
      payment_detected: { status: 'paid', events: ['payment_detected:sim1'], payments: ['a:100000:confirmed:1', 'sim1:100000:mempool:0'] },
      paid: already,
      expired: already,
      late_paid: already,
      payment_reversed: { status: 'paid', events: ['payment_reversed:a'], payments: ['a:100000:replaced:0'] },
      payment_restored: already,
    },
  },
  {
    name: 'late_paid',
    invoice: LATE_PAID,
    now: EXPIRES + 2 * DAY,
    outcomes: {
      payment_detected: { status: 'late_paid', events: ['payment_detected:sim1'], payments: ['a:100000:confirmed:1', 'sim1:100000:mempool:0'] },
      paid: already,
      expired: already,
      late_paid: already,
      payment_reversed: { status: 'late_paid', events: ['payment_reversed:a'], payments: ['a:100000:replaced:0'] },
      payment_restored: already,
    },
  },
  {
    name: 'paid, its payment double-spent away',
    invoice: REVERSED,
    now: EXPIRES + DAY,
    outcomes: {
      payment_detected: { status: 'paid', events: ['payment_detected:sim1'], payments: ['a:100000:replaced:0', 'sim1:100000:mempool:0'] },
      paid: already,
      expired: already,
      late_paid: already,
      payment_reversed: notPaid,
      payment_restored: { status: 'paid', events: ['payment_restored:a'], payments: ['a:100000:confirmed:1'] },
    },
  },
  {
    name: 'cancelled',
    invoice: CANCELLED,
    now: EXPIRES + DAY,
    outcomes: {
      payment_detected: { status: 'cancelled', events: ['payment_detected:sim0'], payments: ['sim0:100000:mempool:0'] },
      paid: final,
      expired: final,
      late_paid: final,
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'expired, in the late window',
    invoice: EXPIRED,
    now: EXPIRES + DAY,
    outcomes: {
      payment_detected: { status: 'expired', events: ['payment_detected:sim0'], payments: ['sim0:100000:mempool:0'] },
      paid: gone,
      expired: gone,
      late_paid: { status: 'late_paid', events: ['payment_detected:sim0', 'late_paid'], payments: ['sim0:100000:confirmed:1'] },
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'expired, underpaid, in the late window',
    invoice: makeInvoice({ status: 'expired', expiredAt: EXPIRES, payments: [mempool('a', 30_000, T0 + MINUTE)] }),
    now: EXPIRES + DAY,
    outcomes: {
      payment_detected: { status: 'expired', events: ['payment_detected:sim1'], payments: ['a:30000:mempool:0', 'sim1:70000:mempool:0'] },
      paid: gone,
      expired: gone,
      late_paid: { status: 'late_paid', events: ['payment_detected:sim1', 'late_paid'], payments: ['a:30000:confirmed:1', 'sim1:70000:confirmed:1'] },
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
  {
    name: 'fully expired',
    invoice: EXPIRED,
    now: EXPIRES + LATE_WINDOW,
    outcomes: {
      // Spec 3.1: the payment flow reaching a fully expired invoice is 410; the chain no longer watches it.
      payment_detected: gone,
      paid: gone,
      expired: gone,
      late_paid: gone,
      payment_reversed: notPaid,
      payment_restored: notPaid,
    },
  },
];

describe('simulate: every event x every status', () => {
  for (const row of rows) {
    for (const event of SIMULATED_EVENTS) {
      const outcome = row.outcomes[event];
      test(`${event} on ${row.name}`, () => {
        if ('error' in outcome) {
          assert.throws(
            () => simulate(row.invoice, event, row.now),
            (err: unknown) => err instanceof ApiError && err.code === outcome.error && err.status === outcome.httpStatus,
          );
          return;
        }
        const result = simulate(row.invoice, event, row.now);
        assert.equal(result.invoice.status, outcome.status);
        assert.deepEqual(describeEvents(result.events, nameSynthetic(row.invoice)), outcome.events);
        assert.deepEqual(describePayments(result), outcome.payments);
        for (const p of result.invoice.payments.slice(row.invoice.payments.length)) {
          assert.equal(p.firstSeenAt, row.now, 'a simulated payment is seen now');
        }
      });
    }
  }
});

describe('simulate: refusals say what was asked and why', () => {
  const waiting = makeInvoice({ payments: [mempool('a', AMOUNT, EXPIRES - MINUTE)] });
  const valid: Array<[string, Invoice, SimulatedEvent, number, RegExp]> = [
    ['late_paid on an invoice waiting for confirmations', waiting, 'late_paid', EXPIRES + MINUTE, /cannot expire.*simulate late_paid refused/],
    ['expired on an invoice waiting for confirmations', waiting, 'expired', EXPIRES + MINUTE, /cannot expire.*simulate expired refused/],
    ['late_paid past the late window', EXPIRED, 'late_paid', EXPIRES + LATE_WINDOW, /past its late window.*simulate late_paid refused/],
    ['payment_detected past the late window', EXPIRED, 'payment_detected', EXPIRES + LATE_WINDOW, /past its late window.*simulate payment_detected refused/],
    ['paid inside the late window', EXPIRED, 'paid', EXPIRES + DAY, /simulate paid needs a pending invoice/],
  ];
  for (const [name, invoice, event, now, message] of valid) {
    test(name, () => assert.throws(() => simulate(invoice, event, now), (err: unknown) => err instanceof ApiError && message.test(err.message)));
  }
});

describe('simulate: timestamps', () => {
  test('expired brings the expiry forward to now: expires_at = expired_at = now', () => {
    const now = T0 + 5 * MINUTE;
    const { invoice } = simulate(makeInvoice(), 'expired', now);
    assert.equal(invoice.expiresAt, now);
    assert.equal(invoice.expiredAt, now);
  });

  test('expired on an invoice already past expires_at keeps expires_at as the expiry time', () => {
    const { invoice } = simulate(makeInvoice(), 'expired', EXPIRES + HOUR);
    assert.equal(invoice.expiresAt, EXPIRES);
    assert.equal(invoice.expiredAt, EXPIRES);
  });

  test('expired, then late_paid later: the late window runs from the simulated expiry', () => {
    const expiredAt = T0 + 5 * MINUTE;
    const expired = simulate(makeInvoice(), 'expired', expiredAt).invoice;
    const paid = simulate(expired, 'late_paid', expiredAt + HOUR).invoice;
    assert.deepEqual([paid.status, paid.expiredAt, paid.paidAt], ['late_paid', expiredAt, expiredAt + HOUR]);
    assert.throws(() => simulate(expired, 'late_paid', expiredAt + LATE_WINDOW), { code: 'invoice_expired' });
  });

  test('payment_detected then paid: the detected payment confirms, nothing is added', () => {
    const detected = simulate(makeInvoice(), 'payment_detected', T0 + MINUTE);
    const paid = simulate(detected.invoice, 'paid', T0 + 11 * MINUTE);
    assert.deepEqual(describePayments(paid), ['sim0:100000:confirmed:1']);
    assert.deepEqual(describeEvents(paid.events), ['paid']);
    assert.equal(paid.invoice.paidAt, T0 + 11 * MINUTE);
    assert.equal(paid.invoice.payments[0]?.firstSeenAt, T0 + MINUTE);
  });

  test('payment_detected then expired: an unconfirmed payment covering the amount waits (409)', () => {
    const detected = simulate(makeInvoice(), 'payment_detected', T0 + MINUTE);
    assert.throws(() => simulate(detected.invoice, 'expired', T0 + 2 * MINUTE), {
      code: 'invoice_already_paid',
      message: /waiting for confirmations/,
    });
  });
});

describe('simulate: confirmations', () => {
  const valid: Array<[required: number, event: SimulatedEvent, events: string[], payments: string[]]> = [
    [0, 'payment_detected', ['payment_detected:sim0', 'paid'], ['sim0:100000:mempool:0']],
    [0, 'paid', ['payment_detected:sim0', 'paid'], ['sim0:100000:confirmed:1']],
    [1, 'paid', ['payment_detected:sim0', 'paid'], ['sim0:100000:confirmed:1']],
    [6, 'paid', ['payment_detected:sim0', 'paid'], ['sim0:100000:confirmed:6']],
    [6, 'late_paid', ['expired', 'payment_detected:sim0', 'late_paid'], ['sim0:100000:confirmed:6']],
  ];
  for (const [required, event, events, payments] of valid) {
    test(`${event} with ${required} required`, () => {
      const invoice = makeInvoice({ confirmationsRequired: required });
      const result = simulate(invoice, event, T0 + MINUTE);
      assert.deepEqual(describeEvents(result.events, nameSynthetic(invoice)), events);
      assert.deepEqual(describePayments(result), payments);
    });
  }

  test('paid keeps a deeper payment as it is and leaves replaced payments replaced', () => {
    const invoice = makeInvoice({
      payments: [confirmed('a', 30_000, T0 + MINUTE, 3), replaced('b', AMOUNT, T0 + MINUTE)],
    });
    const result = simulate(invoice, 'paid', T0 + 5 * MINUTE);
    assert.deepEqual(describePayments(result), ['a:30000:confirmed:3', 'b:100000:replaced:0', 'sim2:70000:confirmed:1']);
    assert.equal(amountReceived(result.invoice), AMOUNT);
  });

  test('paid matures an immature coinbase (100 confirmations), so the invoice is paid', () => {
    const invoice = makeInvoice({ payments: [coinbase('a', AMOUNT, T0 + MINUTE, 3)] });
    const result = simulate(invoice, 'paid', T0 + 5 * MINUTE);
    assert.equal(result.invoice.status, 'paid');
    assert.deepEqual(describePayments(result), ['a:100000:confirmed:100']);
  });
});

describe('simulate: payment_reversed and payment_restored', () => {
  test('a paid invoice held by two payments: both are double-spent away, one event names the first; restored, both confirm again', () => {
    const invoice = makeInvoice({ status: 'paid', paidAt: T0 + 10 * MINUTE, payments: [confirmed('a', 60_000, T0 + MINUTE), confirmed('b', 60_000, T0 + 2 * MINUTE, 3)] });
    const reversed = simulate(invoice, 'payment_reversed', T0 + HOUR);
    assert.deepEqual(describeEvents(reversed.events), ['payment_reversed:a']);
    assert.deepEqual(describePayments(reversed), ['a:60000:replaced:0', 'b:60000:replaced:0']);
    assert.equal(amountReceived(reversed.invoice), 0);
    assert.equal(reversed.invoice.paidAt, invoice.paidAt, 'still paid, since when it was');
    const restored = simulate(reversed.invoice, 'payment_restored', T0 + 2 * HOUR);
    assert.deepEqual(describeEvents(restored.events), ['payment_restored:a']);
    assert.deepEqual(describePayments(restored), ['a:60000:confirmed:1', 'b:60000:confirmed:1']);
  });

  test('with no confirmation required, an unconfirmed payment holds it: reversed, then restored (confirmed)', () => {
    const invoice = makeInvoice({ status: 'paid', paidAt: T0 + MINUTE, confirmationsRequired: 0, payments: [mempool('a', AMOUNT, T0 + MINUTE)] });
    const reversed = simulate(invoice, 'payment_reversed', T0 + HOUR);
    assert.deepEqual([describeEvents(reversed.events), describePayments(reversed)], [['payment_reversed:a'], ['a:100000:replaced:0']]);
    const restored = simulate(reversed.invoice, 'payment_restored', T0 + 2 * HOUR);
    assert.deepEqual([describeEvents(restored.events), describePayments(restored)], [['payment_restored:a'], ['a:100000:confirmed:1']]);
  });

  test('a paid invoice whose payment went back to the mempool (a reorg) is restored by mining it again', () => {
    const invoice = makeInvoice({ status: 'paid', paidAt: T0 + 10 * MINUTE, payments: [mempool('a', AMOUNT, T0 + MINUTE)] });
    const restored = simulate(invoice, 'payment_restored', T0 + HOUR);
    assert.deepEqual([describeEvents(restored.events), describePayments(restored)], [['payment_restored:a'], ['a:100000:confirmed:1']]);
    assert.throws(() => simulate(invoice, 'payment_reversed', T0 + HOUR), { code: 'invoice_not_paid', message: /no longer hold it: they were reversed already/ });
  });

  test('refusals say what was asked and what to do', () => {
    assert.throws(() => simulate(makeInvoice(), 'payment_reversed', T0 + MINUTE), { message: `Invoice ${PAID.id} is pending; simulate payment_reversed needs a paid invoice.` });
    assert.throws(() => simulate(PAID, 'payment_restored', EXPIRES), { code: 'invoice_already_paid', message: /its payments hold it: nothing to restore \(simulate payment_reversed first\)/ });
    assert.throws(() => simulate(REVERSED, 'payment_reversed', EXPIRES), { message: /simulate payment_restored brings them back/ });
  });
});

describe('simulate: synthetic txids', () => {
  test('are 64 hex characters, deterministic, distinct per payment and per invoice', () => {
    const ids = [syntheticTxid('inv_a', 0), syntheticTxid('inv_a', 1), syntheticTxid('inv_b', 0)];
    for (const id of ids) assert.match(id, /^[0-9a-f]{64}$/);
    assert.equal(new Set(ids).size, 3);
    assert.equal(syntheticTxid('inv_a', 0), ids[0]);
    const first = simulate(makeInvoice(), 'payment_detected', T0 + MINUTE);
    const again = simulate(makeInvoice(), 'payment_detected', T0 + MINUTE);
    assert.deepEqual(first, again);
  });

  test('skip one already in the list (after a payment vanished)', () => {
    const base = makeInvoice();
    const twoDetected = simulate(simulate(base, 'payment_detected', T0 + MINUTE).invoice, 'payment_detected', T0 + 2 * MINUTE);
    const [, second] = twoDetected.invoice.payments;
    assert.ok(second);
    const firstGone = transition(twoDetected.invoice, { kind: 'payments', payments: [second] }, T0 + 3 * MINUTE);
    const third = simulate(firstGone.invoice, 'payment_detected', T0 + 4 * MINUTE);
    assert.deepEqual(describePayments(third), ['sim1:100000:mempool:0', 'sim2:100000:mempool:0']);
  });
});

describe('simulate: refusals', () => {
  for (const event of SIMULATED_EVENTS) {
    test(`${event} on a live invoice: 403 test_mode_only`, () => {
      assert.throws(
        () => simulate(makeInvoice({ livemode: true }), event, T0 + MINUTE),
        (err: unknown) => err instanceof ApiError && err.code === 'test_mode_only' && err.status === 403,
      );
    });
  }

  test('messages name the invoice and its status', () => {
    assert.throws(() => simulate(PAID, 'paid', EXPIRES), { message: `Invoice ${PAID.id} is paid; simulate paid needs an unpaid invoice.` });
    assert.throws(() => simulate(CANCELLED, 'expired', EXPIRES), { message: /is cancelled; a cancelled invoice is final/ });
  });

  for (const event of SIMULATED_EVENTS) {
    test(`${event} never mutates its input`, () => {
      // An invoice each event changes: a partly paid pending one, or a paid one for the two a paid invoice takes.
      const paid = { payment_reversed: PAID, payment_restored: REVERSED } as Partial<Record<SimulatedEvent, Invoice>>;
      const invoice = structuredClone(paid[event] ?? makeInvoice({ payments: [mempool('a', 30_000, T0 + MINUTE)] }));
      const before = structuredClone(invoice);
      assert.ok(simulate(deepFreeze(invoice), event, T0 + 5 * MINUTE).events.length > 0);
      assert.deepEqual(invoice, before);
    });
  }
});

describe('simulate: events in the same millisecond', () => {
  const now = T0 + 10 * MINUTE;
  const pending = makeInvoice({ expiresAt: T0 + 30 * MINUTE });

  test('a payment detected this millisecond covers the invoice: it cannot be expired', () => {
    const detected = simulate(pending, 'payment_detected', now).invoice;
    assert.throws(() => simulate(detected, 'expired', now), (e: ApiError) => e.code === 'invoice_already_paid');
  });

  test('an underpayment detected this millisecond was on time; the invoice expires after it', () => {
    const partial = { ...pending, payments: [mempool('a', AMOUNT / 2, now)] };
    const expired = simulate(partial, 'expired', now).invoice;
    assert.equal(expired.status, 'expired');
    assert.ok(expired.payments[0]!.firstSeenAt < expired.expiresAt, 'the payment counts as on time');
    const late = simulate(partial, 'late_paid', now);
    assert.equal(late.invoice.status, 'late_paid');
    assert.deepEqual(late.events.map((e) => e.type), ['invoice.expired', 'invoice.payment_detected', 'invoice.late_paid']);
  });
});
