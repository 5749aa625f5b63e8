import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../../src/domain/errors.ts';
import { amountConfirmed, amountReceived } from '../../../src/domain/invoice-amounts.ts';
import type { Invoice, InvoiceStatus, Payment } from '../../../src/domain/invoice.ts';
import {
  isFullyExpired,
  transition,
  joinUntil,
  watchUntil,
  type Fact,
  type Transition,
} from '../../../src/domain/invoice-state.ts';
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
  replaced,
} from './invoice.fixtures.ts';

const TICK: Fact = { kind: 'tick' };
const CANCEL: Fact = { kind: 'cancel' };
const pays = (...payments: Payment[]): Fact => ({ kind: 'payments', payments });
/** The same fact while the chain is still being read up to its tip. */
const catchingUp = (...payments: Payment[]): Fact => ({ kind: 'payments', payments, catchingUp: true });
/** Catching up, the payments read from a block of time `heldAt`. */
const heldAt = (at: number, ...payments: Payment[]): Fact => ({ kind: 'payments', payments, catchingUp: true, heldAt: at });

interface Step {
  at: number;
  fact: Fact;
  status: InvoiceStatus;
  events: string[];
  /** Extra fields the invoice must have after this step. */
  expect?: Partial<Pick<Invoice, 'paidAt' | 'expiredAt' | 'cancelledAt'>> & { received?: number; confirmed?: number };
}

interface Scenario {
  name: string;
  invoice?: Partial<Invoice>;
  steps: Step[];
}

// Each scenario feeds the facts one after another, the way the chain watcher
// and the expiry worker would, and checks status and events after every step.
const scenarios: Scenario[] = [
  {
    name: 'exact payment: detected in mempool, paid on its first confirmation',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'], expect: { received: AMOUNT, confirmed: 0 } },
      { at: T0 + 11 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['paid'], expect: { paidAt: T0 + 11 * MINUTE, confirmed: AMOUNT } },
      { at: T0 + 21 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 2)), status: 'paid', events: [], expect: { paidAt: T0 + 11 * MINUTE } },
    ],
  },
  {
    name: 'two partial payments add up',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', 40_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: T0 + 2 * MINUTE, fact: pays(mempool('a', 40_000, T0 + MINUTE), mempool('b', 60_000, T0 + 2 * MINUTE)), status: 'pending', events: ['payment_detected:b'], expect: { received: AMOUNT, confirmed: 0 } },
      { at: T0 + 10 * MINUTE, fact: pays(confirmed('a', 40_000, T0 + MINUTE), mempool('b', 60_000, T0 + 2 * MINUTE)), status: 'pending', events: [], expect: { confirmed: 40_000 } },
      { at: T0 + 20 * MINUTE, fact: pays(confirmed('a', 40_000, T0 + MINUTE, 2), confirmed('b', 60_000, T0 + 2 * MINUTE)), status: 'paid', events: ['paid'], expect: { paidAt: T0 + 20 * MINUTE } },
    ],
  },
  {
    name: 'one transaction paying in several outputs: one payment_detected, naming its first output; a later output of it adds none',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', 30_000, T0 + MINUTE, 1), mempool('a', 30_000, T0 + MINUTE, 4)), status: 'pending', events: ['payment_detected:a:1'], expect: { received: 60_000 } },
      { at: T0 + 2 * MINUTE, fact: pays(mempool('a', 30_000, T0 + MINUTE, 1), mempool('a', 30_000, T0 + MINUTE, 4), mempool('b', 10_000, T0 + 2 * MINUTE), mempool('a', 30_000, T0 + MINUTE, 7)), status: 'pending', events: ['payment_detected:b', 'payment_detected:a:7'], expect: { received: AMOUNT } },
      { at: T0 + 3 * MINUTE, fact: pays(confirmed('a', 30_000, T0 + MINUTE, 1, 1), confirmed('a', 30_000, T0 + MINUTE, 1, 4), confirmed('b', 10_000, T0 + 2 * MINUTE), confirmed('a', 30_000, T0 + MINUTE, 1, 7)), status: 'paid', events: ['paid'] },
    ],
  },
  {
    name: 'underpaid, then expiry: expired with the partial amount received',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', 40_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES - 1, fact: TICK, status: 'pending', events: [] },
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES, received: 40_000, paidAt: null } },
    ],
  },
  {
    name: 'expiry learned late (after a restart) is dated at expires_at',
    steps: [{ at: EXPIRES + 3 * HOUR, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES } }],
  },
  {
    name: 'overpayment is paid and shows in amount received',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', 150_000, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'], expect: { received: 150_000, confirmed: 150_000 } },
    ],
  },
  {
    name: 'a payment first seen after expiry expires the invoice in the same fact, then pays it late',
    steps: [
      { at: EXPIRES + 5 * MINUTE, fact: pays(mempool('a', AMOUNT, EXPIRES + 5 * MINUTE)), status: 'expired', events: ['payment_detected:a', 'expired'], expect: { expiredAt: EXPIRES } },
      { at: EXPIRES + 15 * MINUTE, fact: pays(confirmed('a', AMOUNT, EXPIRES + 5 * MINUTE)), status: 'late_paid', events: ['late_paid'], expect: { paidAt: EXPIRES + 15 * MINUTE } },
    ],
  },
  {
    name: 'catching up (Till was down): on-time partial payments found block by block pay the invoice, it does not expire in between',
    steps: [
      { at: EXPIRES + 5 * MINUTE, fact: catchingUp(confirmed('a', 60_000, T0 + MINUTE, 2)), status: 'pending', events: ['payment_detected:a'] },
      {
        at: EXPIRES + 5 * MINUTE,
        fact: catchingUp(confirmed('a', 60_000, T0 + MINUTE, 2), confirmed('b', 40_000, T0 + 2 * MINUTE)),
        status: 'paid',
        events: ['payment_detected:b', 'paid'],
      },
    ],
  },
  {
    name: 'catching up with too little paid on time: the expiry waits for the tick after the catch-up, dated at expires_at',
    steps: [
      { at: EXPIRES + 5 * MINUTE, fact: catchingUp(confirmed('a', 60_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + 6 * MINUTE, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES } },
    ],
  },
  {
    name: 'catching up, 0 confirmations: a late payment read from the mempool does not expire the invoice; the on-time one in a block then pays it',
    invoice: { confirmationsRequired: 0 },
    steps: [
      { at: EXPIRES + DAY, fact: catchingUp(mempool('b', AMOUNT, EXPIRES + HOUR)), status: 'pending', events: ['payment_detected:b'] },
      {
        at: EXPIRES + DAY,
        fact: heldAt(T0 + 2 * MINUTE, mempool('b', AMOUNT, EXPIRES + HOUR), confirmed('a', AMOUNT, T0 + 2 * MINUTE)),
        status: 'paid',
        events: ['payment_detected:a', 'paid'],
        expect: { paidAt: T0 + 2 * MINUTE },
      },
    ],
  },
  {
    name: 'catching up past the late window: a late payment confirmed inside it (Till was down) makes an expired invoice late_paid',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      {
        at: EXPIRES + LATE_WINDOW + DAY,
        fact: heldAt(EXPIRES + DAY, confirmed('a', AMOUNT, EXPIRES + DAY)),
        status: 'late_paid',
        events: ['payment_detected:a', 'late_paid'],
        expect: { paidAt: EXPIRES + DAY, expiredAt: EXPIRES },
      },
    ],
  },
  {
    name: 'catching up past the late window: a pending invoice paid in full late inside it expires and is late_paid in one fact',
    steps: [
      {
        at: EXPIRES + LATE_WINDOW + DAY,
        fact: heldAt(EXPIRES + HOUR, confirmed('a', AMOUNT, EXPIRES + HOUR)),
        status: 'late_paid',
        events: ['payment_detected:a', 'expired', 'late_paid'],
        expect: { expiredAt: EXPIRES, paidAt: EXPIRES + HOUR },
      },
    ],
  },
  {
    name: 'catching up: a late payment confirmed after the late window, in full, expires the invoice and changes nothing more',
    steps: [
      { at: EXPIRES + LATE_WINDOW + 2 * DAY, fact: heldAt(EXPIRES + LATE_WINDOW + DAY, confirmed('a', AMOUNT, EXPIRES + LATE_WINDOW + DAY)), status: 'expired', events: ['payment_detected:a', 'expired'], expect: { expiredAt: EXPIRES } },
    ],
  },
  {
    name: 'catching up: an on-time payment read from a block is paid as of the block\'s time',
    steps: [{ at: EXPIRES + DAY, fact: heldAt(T0 + 3 * MINUTE, confirmed('a', AMOUNT, T0 + 2 * MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'], expect: { paidAt: T0 + 3 * MINUTE } }],
  },
  {
    name: 'a block time before the invoice existed is judged at its creation',
    steps: [{ at: EXPIRES + DAY, fact: heldAt(T0 - HOUR, confirmed('a', AMOUNT, T0 - HOUR)), status: 'paid', events: ['payment_detected:a', 'paid'], expect: { paidAt: T0 } }],
  },
  {
    name: 'catching up: a block older than the expiry already recorded makes the invoice late_paid no earlier than it expired',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + DAY, fact: heldAt(EXPIRES - MINUTE, confirmed('a', AMOUNT, EXPIRES - MINUTE)), status: 'late_paid', events: ['payment_detected:a', 'late_paid'], expect: { paidAt: EXPIRES } },
    ],
  },
  {
    name: 'a block time later than now is judged at now',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + LATE_WINDOW - MINUTE, fact: heldAt(EXPIRES + LATE_WINDOW + HOUR, confirmed('a', AMOUNT, EXPIRES + DAY)), status: 'late_paid', events: ['payment_detected:a', 'late_paid'], expect: { paidAt: EXPIRES + LATE_WINDOW - MINUTE } },
    ],
  },
  {
    name: 'a payment seen exactly at expires_at is late',
    steps: [{ at: EXPIRES, fact: pays(mempool('a', AMOUNT, EXPIRES)), status: 'expired', events: ['payment_detected:a', 'expired'] }],
  },
  {
    name: 'a confirmed late payment in the expiring fact makes it late_paid at once',
    steps: [
      { at: EXPIRES + HOUR, fact: pays(confirmed('a', AMOUNT, EXPIRES + HOUR)), status: 'late_paid', events: ['payment_detected:a', 'expired', 'late_paid'], expect: { expiredAt: EXPIRES, paidAt: EXPIRES + HOUR } },
    ],
  },
  {
    name: 'a late payment within the window makes an expired invoice late_paid',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + 6 * DAY, fact: pays(mempool('a', AMOUNT, EXPIRES + 6 * DAY)), status: 'expired', events: ['payment_detected:a'] },
      { at: EXPIRES + 6 * DAY + HOUR, fact: pays(confirmed('a', AMOUNT, EXPIRES + 6 * DAY)), status: 'late_paid', events: ['late_paid'], expect: { paidAt: EXPIRES + 6 * DAY + HOUR, expiredAt: EXPIRES } },
    ],
  },
  {
    name: 'a payment seen after the late window is recorded and reported but changes nothing',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + LATE_WINDOW, fact: pays(confirmed('a', AMOUNT, EXPIRES + LATE_WINDOW, 3)), status: 'expired', events: ['payment_detected:a'], expect: { received: AMOUNT, paidAt: null } },
    ],
  },
  {
    name: 'a late payment confirming after the window has ended is too late',
    steps: [
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + LATE_WINDOW - HOUR, fact: pays(mempool('a', AMOUNT, EXPIRES + LATE_WINDOW - HOUR)), status: 'expired', events: ['payment_detected:a'] },
      { at: EXPIRES + LATE_WINDOW, fact: pays(confirmed('a', AMOUNT, EXPIRES + LATE_WINDOW - HOUR)), status: 'expired', events: [] },
    ],
  },
  {
    name: 'late partial payments add up with an on-time underpayment',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', 30_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'] },
      { at: EXPIRES + DAY, fact: pays(confirmed('a', 30_000, T0 + MINUTE, 9), mempool('b', 30_000, EXPIRES + DAY)), status: 'expired', events: ['payment_detected:b'] },
      { at: EXPIRES + 2 * DAY, fact: pays(confirmed('a', 30_000, T0 + MINUTE, 9), confirmed('b', 30_000, EXPIRES + DAY), mempool('c', 40_000, EXPIRES + 2 * DAY)), status: 'expired', events: ['payment_detected:c'], expect: { received: AMOUNT, confirmed: 60_000 } },
      { at: EXPIRES + 2 * DAY + HOUR, fact: pays(confirmed('a', 30_000, T0 + MINUTE, 9), confirmed('b', 30_000, EXPIRES + DAY), confirmed('c', 40_000, EXPIRES + 2 * DAY)), status: 'late_paid', events: ['late_paid'] },
    ],
  },
  {
    name: 'an on-time mempool underpayment and a late payment: expires, then late_paid once both confirm',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', 50_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + MINUTE, fact: pays(mempool('a', 50_000, T0 + MINUTE), confirmed('b', 50_000, EXPIRES + MINUTE)), status: 'expired', events: ['payment_detected:b', 'expired'] },
      { at: EXPIRES + HOUR, fact: pays(confirmed('a', 50_000, T0 + MINUTE), confirmed('b', 50_000, EXPIRES + MINUTE, 2)), status: 'late_paid', events: ['late_paid'] },
    ],
  },
  {
    name: 'unconfirmed on-time payments covering the amount wait past expiry, then pay (not late_paid)',
    steps: [
      { at: EXPIRES - MINUTE, fact: pays(mempool('a', AMOUNT, EXPIRES - MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES, fact: TICK, status: 'pending', events: [] },
      { at: EXPIRES + LATE_WINDOW + DAY, fact: TICK, status: 'pending', events: [] },
      { at: EXPIRES + LATE_WINDOW + 2 * DAY, fact: pays(confirmed('a', AMOUNT, EXPIRES - MINUTE)), status: 'paid', events: ['paid'], expect: { paidAt: EXPIRES + LATE_WINDOW + 2 * DAY, expiredAt: null } },
    ],
  },
  {
    name: 'a waiting invoice whose payment is replaced expires when that is learned',
    steps: [
      { at: EXPIRES - MINUTE, fact: pays(mempool('a', AMOUNT, EXPIRES - MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + 2 * HOUR, fact: pays(replaced('a', AMOUNT, EXPIRES - MINUTE), mempool('b', AMOUNT, EXPIRES + 2 * HOUR)), status: 'expired', events: ['payment_detected:b', 'expired'], expect: { expiredAt: EXPIRES + 2 * HOUR, received: AMOUNT } },
      { at: EXPIRES + 2 * HOUR + LATE_WINDOW - 1, fact: pays(replaced('a', AMOUNT, EXPIRES - MINUTE), confirmed('b', AMOUNT, EXPIRES + 2 * HOUR)), status: 'late_paid', events: ['late_paid'] },
    ],
  },
  {
    name: 'RBF: a replaced payment never pays; its replacement does',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: T0 + 2 * MINUTE, fact: pays(replaced('a', AMOUNT, T0 + MINUTE), mempool('b', AMOUNT, T0 + 2 * MINUTE)), status: 'pending', events: ['payment_detected:b'], expect: { received: AMOUNT } },
      { at: T0 + 12 * MINUTE, fact: pays(replaced('a', AMOUNT, T0 + MINUTE), confirmed('b', AMOUNT, T0 + 2 * MINUTE)), status: 'paid', events: ['paid'] },
    ],
  },
  {
    name: 'RBF away from the invoice: nothing received, the invoice expires',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: T0 + 2 * MINUTE, fact: pays(replaced('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: [], expect: { received: 0 } },
      { at: EXPIRES, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES } },
    ],
  },
  {
    name: 'reorg back to mempool on a pending invoice lowers the confirmed amount',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', 60_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'], expect: { confirmed: 60_000 } },
      { at: T0 + 11 * MINUTE, fact: pays(mempool('a', 60_000, T0 + MINUTE), mempool('b', 40_000, T0 + 11 * MINUTE)), status: 'pending', events: ['payment_detected:b'], expect: { confirmed: 0, received: AMOUNT } },
      { at: T0 + 21 * MINUTE, fact: pays(confirmed('a', 60_000, T0 + MINUTE), confirmed('b', 40_000, T0 + 11 * MINUTE)), status: 'paid', events: ['paid'] },
    ],
  },
  {
    name: 'reorg after paid: payment_reversed once; mined again, payment_restored once',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'] },
      { at: T0 + 11 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_reversed:a'] },
      { at: T0 + 12 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: [] },
      { at: T0 + 13 * MINUTE, fact: TICK, status: 'paid', events: [] },
      { at: T0 + 21 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_restored:a'], expect: { paidAt: T0 + MINUTE } },
      { at: T0 + 22 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 2)), status: 'paid', events: [] },
      { at: T0 + 31 * MINUTE, fact: pays(), status: 'paid', events: ['payment_reversed:a'], expect: { received: 0 } },
      { at: T0 + 41 * MINUTE, fact: pays(), status: 'paid', events: [] },
    ],
  },
  {
    name: 'a paid payment double-spent away (replaced) is a reversal',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'] },
      { at: T0 + HOUR, fact: pays(replaced('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_reversed:a'] },
    ],
  },
  {
    name: 'losing one of two payments reverses; new money covering it again restores',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', 60_000, T0 + MINUTE), confirmed('b', 40_000, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'payment_detected:b', 'paid'] },
      { at: T0 + HOUR, fact: pays(confirmed('a', 60_000, T0 + MINUTE, 6)), status: 'paid', events: ['payment_reversed:b'] },
      { at: T0 + 2 * HOUR, fact: pays(confirmed('a', 60_000, T0 + MINUTE, 12), confirmed('c', 40_000, T0 + 2 * HOUR)), status: 'paid', events: ['payment_detected:c', 'payment_restored:c'] },
    ],
  },
  {
    name: 'an extra payment on a paid invoice keeps it covered when another is lost',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'] },
      { at: T0 + HOUR, fact: pays(mempool('a', AMOUNT, T0 + MINUTE), confirmed('b', AMOUNT, T0 + HOUR)), status: 'paid', events: ['payment_detected:b'], expect: { received: 2 * AMOUNT } },
    ],
  },
  {
    name: 'a late_paid invoice reorged out emits payment_reversed and stays late_paid; mined again, even past its window, payment_restored',
    steps: [
      { at: EXPIRES + HOUR, fact: pays(confirmed('a', AMOUNT, EXPIRES + HOUR)), status: 'late_paid', events: ['payment_detected:a', 'expired', 'late_paid'] },
      { at: EXPIRES + 2 * HOUR, fact: pays(mempool('a', AMOUNT, EXPIRES + HOUR)), status: 'late_paid', events: ['payment_reversed:a'] },
      { at: EXPIRES + LATE_WINDOW + DAY, fact: pays(confirmed('a', AMOUNT, EXPIRES + HOUR)), status: 'late_paid', events: ['payment_restored:a'] },
    ],
  },
  {
    name: '6 confirmations required: pays on the 6th; a shallow reorg back to 5 is no reversal',
    invoice: { confirmationsRequired: 6 },
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 1)), status: 'pending', events: ['payment_detected:a'], expect: { confirmed: 0 } },
      { at: T0 + 41 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 5)), status: 'pending', events: [] },
      { at: T0 + 51 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 6)), status: 'paid', events: ['paid'], expect: { confirmed: AMOUNT } },
      { at: T0 + 52 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE, 5)), status: 'paid', events: [], expect: { confirmed: 0 } },
      { at: T0 + 53 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_reversed:a'] },
    ],
  },
  {
    name: '0 confirmations required: a mempool payment pays at once; its replacement reverses; back in the mempool, restores',
    invoice: { confirmationsRequired: 0 },
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'], expect: { confirmed: AMOUNT, paidAt: T0 + MINUTE } },
      { at: T0 + 2 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: [] },
      { at: T0 + 3 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: [] },
      { at: T0 + 4 * MINUTE, fact: pays(replaced('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_reversed:a'] },
      { at: T0 + 5 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_restored:a'] },
    ],
  },
  {
    name: '0 confirmations required: a late mempool payment makes it late_paid',
    invoice: { confirmationsRequired: 0 },
    steps: [{ at: EXPIRES + MINUTE, fact: pays(mempool('a', AMOUNT, EXPIRES + MINUTE)), status: 'late_paid', events: ['payment_detected:a', 'expired', 'late_paid'] }],
  },
  {
    name: 'payment_detected once per transaction across many facts',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', 10_000, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: T0 + 2 * MINUTE, fact: pays(mempool('a', 10_000, T0 + MINUTE)), status: 'pending', events: [] },
      { at: T0 + 3 * MINUTE, fact: pays(confirmed('a', 10_000, T0 + MINUTE)), status: 'pending', events: [] },
      { at: T0 + 4 * MINUTE, fact: pays(confirmed('a', 10_000, T0 + MINUTE, 2), mempool('b', 10_000, T0 + 4 * MINUTE), mempool('b', 20_000, T0 + 4 * MINUTE, 1)), status: 'pending', events: ['payment_detected:b'] },
      { at: T0 + 5 * MINUTE, fact: TICK, status: 'pending', events: [] },
      { at: T0 + 6 * MINUTE, fact: pays(confirmed('a', 10_000, T0 + MINUTE, 3), confirmed('b', 10_000, T0 + 4 * MINUTE), confirmed('b', 20_000, T0 + 4 * MINUTE, 1, 1)), status: 'pending', events: [], expect: { confirmed: 40_000 } },
    ],
  },
  {
    name: 'cancelled, then paid: stays cancelled and reports the payment for a refund',
    steps: [
      { at: T0 + 5 * MINUTE, fact: CANCEL, status: 'cancelled', events: ['cancelled'], expect: { cancelledAt: T0 + 5 * MINUTE } },
      { at: T0 + 6 * MINUTE, fact: pays(mempool('a', AMOUNT, T0 + 6 * MINUTE)), status: 'cancelled', events: ['payment_detected:a'], expect: { received: AMOUNT } },
      { at: T0 + 16 * MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + 6 * MINUTE)), status: 'cancelled', events: [], expect: { paidAt: null, confirmed: AMOUNT } },
      { at: EXPIRES + DAY, fact: TICK, status: 'cancelled', events: [], expect: { expiredAt: null } },
    ],
  },
  {
    name: 'a pending invoice waiting for confirmations can still be cancelled',
    steps: [
      { at: EXPIRES - MINUTE, fact: pays(mempool('a', AMOUNT, EXPIRES - MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + MINUTE, fact: CANCEL, status: 'cancelled', events: ['cancelled'], expect: { cancelledAt: EXPIRES + MINUTE } },
      { at: EXPIRES + HOUR, fact: pays(confirmed('a', AMOUNT, EXPIRES - MINUTE)), status: 'cancelled', events: [] },
    ],
  },
  {
    name: 'a coinbase is paid at its 100th confirmation, not its first (it cannot be spent before)',
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'], expect: { received: AMOUNT, confirmed: 0 } },
      { at: T0 + 16 * HOUR, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 99)), status: 'pending', events: [], expect: { confirmed: 0 } },
      { at: T0 + 17 * HOUR, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 100)), status: 'paid', events: ['paid'], expect: { paidAt: T0 + 17 * HOUR, confirmed: AMOUNT } },
    ],
  },
  {
    name: 'a coinbase seen on time waits past expiry for its maturity, as an on-time payment confirmed late does: paid, not expired',
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 3)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + HOUR, fact: TICK, status: 'pending', events: [], expect: { expiredAt: null } },
      { at: EXPIRES + 16 * HOUR, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 100)), status: 'paid', events: ['paid'], expect: { paidAt: EXPIRES + 16 * HOUR } },
    ],
  },
  {
    name: 'a coinbase with an ordinary payment: 6 required, the ordinary one at 6 and the coinbase at 99 do not pay; at 100 they do',
    invoice: { confirmationsRequired: 6 },
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', 60_000, T0 + MINUTE, 99), confirmed('b', 40_000, T0 + MINUTE, 6)), status: 'pending', events: ['payment_detected:a', 'payment_detected:b'], expect: { confirmed: 40_000 } },
      { at: T0 + 2 * MINUTE, fact: pays(coinbase('a', 60_000, T0 + MINUTE, 100), confirmed('b', 40_000, T0 + MINUTE, 7)), status: 'paid', events: ['paid'], expect: { confirmed: AMOUNT } },
    ],
  },
  {
    name: 'an on-time coinbase whose block is reorged away before it matures: replaced at once, the waiting invoice expires when that is learned',
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 5)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + HOUR, fact: pays({ ...replaced('a', AMOUNT, T0 + MINUTE), coinbase: true }), status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES + HOUR, received: 0 } },
    ],
  },
  // Found by the property test's author: the catching-up fact that loses what the invoice waited for cannot expire it,
  // and the next fact no longer shows it waited, so its expiry (and late window) was dated at expires_at.
  {
    name: 'catching up: an on-time coinbase whose block was reorged away while Till was down ends the wait as of the block that shows it; the invoice expires then, not at expires_at',
    invoice: { lateWindowMs: HOUR },
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 5)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + HOUR, fact: TICK, status: 'pending', events: [] },
      { at: EXPIRES + 12 * HOUR, fact: heldAt(EXPIRES + 10 * HOUR, { ...replaced('a', AMOUNT, T0 + MINUTE), coinbase: true }), status: 'pending', events: [] },
      { at: EXPIRES + 12 * HOUR, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES + 10 * HOUR } },
    ],
  },
  {
    name: 'catching up: a waiting payment replaced by an underpaying fee bump (read in the start\'s mempool pass) ends the wait then: the invoice expires as of then',
    invoice: { lateWindowMs: HOUR },
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + HOUR, fact: TICK, status: 'pending', events: [] },
      { at: EXPIRES + 6 * HOUR, fact: heldAt(EXPIRES + 5 * HOUR, replaced('a', AMOUNT, T0 + MINUTE), mempool('b', AMOUNT / 2, T0 + MINUTE)), status: 'pending', events: ['payment_detected:b'] },
      { at: EXPIRES + 6 * HOUR, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES + 5 * HOUR } },
    ],
  },
  {
    name: 'catching up: the wait ended, then a block re-mines what it waited for: it waits again, and its later loss dates the expiry',
    invoice: { lateWindowMs: HOUR, confirmationsRequired: 3 },
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + 6 * HOUR, fact: heldAt(EXPIRES + 2 * HOUR, replaced('a', AMOUNT, T0 + MINUTE)), status: 'pending', events: [] },
      { at: EXPIRES + 6 * HOUR, fact: heldAt(EXPIRES + 3 * HOUR, confirmed('a', AMOUNT, T0 + MINUTE, 1)), status: 'pending', events: [] },
      { at: EXPIRES + 7 * HOUR, fact: pays(replaced('a', AMOUNT, T0 + MINUTE)), status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES + 7 * HOUR } },
    ],
  },
  {
    name: 'catching up: a partial payment bumped while Till was down (the bump pays the same) never covered the invoice: it expires at expires_at',
    steps: [
      { at: T0 + MINUTE, fact: pays(mempool('a', AMOUNT / 2, T0 + MINUTE)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + 6 * HOUR, fact: heldAt(EXPIRES + 5 * HOUR, replaced('a', AMOUNT / 2, T0 + MINUTE), mempool('b', AMOUNT / 2, T0 + MINUTE)), status: 'pending', events: ['payment_detected:b'] },
      { at: EXPIRES + 6 * HOUR, fact: TICK, status: 'expired', events: ['expired'], expect: { expiredAt: EXPIRES } },
    ],
  },
  {
    name: '0 confirmations required: an immature coinbase pays at once, as a mempool payment does; its block reorged away reverses it',
    invoice: { confirmationsRequired: 0 },
    steps: [
      { at: T0 + MINUTE, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'], expect: { paidAt: T0 + MINUTE, confirmed: AMOUNT } },
      { at: T0 + HOUR, fact: pays(coinbase('a', AMOUNT, T0 + MINUTE, 7)), status: 'paid', events: [] },
      { at: T0 + 2 * HOUR, fact: pays({ ...replaced('a', AMOUNT, T0 + MINUTE), coinbase: true }), status: 'paid', events: ['payment_reversed:a'], expect: { received: 0 } },
    ],
  },
  {
    name: 'a paid invoice whose payment a reorg puts back in the mempool is not held by an immature coinbase: reversed, restored when the coinbase matures',
    steps: [
      { at: T0 + MINUTE, fact: pays(confirmed('a', AMOUNT, T0 + MINUTE)), status: 'paid', events: ['payment_detected:a', 'paid'] },
      { at: T0 + HOUR, fact: pays(mempool('a', AMOUNT, T0 + MINUTE), coinbase('b', AMOUNT, T0 + HOUR, 3)), status: 'paid', events: ['payment_detected:b', 'payment_reversed:a'] },
      { at: T0 + 20 * HOUR, fact: pays(mempool('a', AMOUNT, T0 + MINUTE), coinbase('b', AMOUNT, T0 + HOUR, 100)), status: 'paid', events: ['payment_restored:b'] },
    ],
  },
  {
    name: 'a late coinbase makes an expired invoice late_paid at its maturity inside the late window',
    steps: [
      { at: EXPIRES + HOUR, fact: pays(coinbase('a', AMOUNT, EXPIRES + HOUR)), status: 'expired', events: ['payment_detected:a', 'expired'], expect: { expiredAt: EXPIRES } },
      { at: EXPIRES + 18 * HOUR, fact: pays(coinbase('a', AMOUNT, EXPIRES + HOUR, 100)), status: 'late_paid', events: ['late_paid'], expect: { paidAt: EXPIRES + 18 * HOUR } },
    ],
  },
  {
    name: 'a late coinbase maturing after the late window is too late, as a late payment confirmed after it is',
    invoice: { lateWindowMs: 10 * HOUR },
    steps: [
      { at: EXPIRES + HOUR, fact: pays(coinbase('a', AMOUNT, EXPIRES + HOUR)), status: 'expired', events: ['payment_detected:a', 'expired'] },
      { at: EXPIRES + 18 * HOUR, fact: pays(coinbase('a', AMOUNT, EXPIRES + HOUR, 100)), status: 'expired', events: [], expect: { paidAt: null } },
    ],
  },
  {
    name: 'catching up: a late coinbase still immature in the blocks read so far does not expire the invoice; matured in them, expired and late_paid at once',
    steps: [
      { at: EXPIRES + DAY, fact: catchingUp(coinbase('a', AMOUNT, EXPIRES + HOUR, 50)), status: 'pending', events: ['payment_detected:a'] },
      { at: EXPIRES + DAY, fact: catchingUp(coinbase('a', AMOUNT, EXPIRES + HOUR, 100)), status: 'late_paid', events: ['expired', 'late_paid'], expect: { expiredAt: EXPIRES } },
    ],
  },
  {
    name: 'a late window of 0: an expired invoice is fully expired at once',
    invoice: { lateWindowMs: 0 },
    steps: [
      { at: EXPIRES, fact: pays(confirmed('a', AMOUNT, EXPIRES)), status: 'expired', events: ['payment_detected:a', 'expired'] },
    ],
  },
];

function run(invoice: Invoice, step: Step): Transition {
  return transition(invoice, step.fact, step.at);
}

describe('transition: scenarios', () => {
  for (const scenario of scenarios) {
    test(scenario.name, () => {
      let invoice = makeInvoice(scenario.invoice);
      scenario.steps.forEach((step, i) => {
        const label = `step ${i + 1} (${step.fact.kind})`;
        const result = run(invoice, step);
        assert.equal(result.invoice.status, step.status, label);
        assert.deepEqual(describeEvents(result.events), step.events, label);
        const { received, confirmed: confirmedSats, ...fields } = step.expect ?? {};
        for (const [field, value] of Object.entries(fields)) {
          assert.equal(result.invoice[field as keyof typeof fields], value, `${label}: ${field}`);
        }
        if (received !== undefined) assert.equal(amountReceived(result.invoice), received, `${label}: received`);
        if (confirmedSats !== undefined) assert.equal(amountConfirmed(result.invoice), confirmedSats, `${label}: confirmed`);
        if (step.fact.kind === 'payments') {
          assert.deepEqual(
            result.invoice.payments.map((p) => [p.txid, p.vout, p.status, p.confirmations]),
            step.fact.payments.map((p) => [p.txid, p.vout, p.status, p.confirmations]),
            `${label}: the reported list becomes the invoice's payments`,
          );
        }
        invoice = result.invoice;
      });
    });
  }

  test('the watcher cannot make an on-time payment late: the earliest sighting is kept', () => {
    const seen = transition(makeInvoice(), pays(mempool('a', AMOUNT, EXPIRES - MINUTE)), EXPIRES - MINUTE).invoice;
    const resighted = transition(seen, pays(mempool('a', AMOUNT, EXPIRES + HOUR)), EXPIRES + HOUR).invoice;
    assert.equal(resighted.payments[0]?.firstSeenAt, EXPIRES - MINUTE);
    assert.equal(resighted.status, 'pending');
    const paid = transition(resighted, pays(confirmed('a', AMOUNT, EXPIRES + 2 * HOUR)), EXPIRES + 2 * HOUR);
    assert.equal(paid.invoice.status, 'paid');
  });
});

describe('transition: when a payment was found replaced', () => {
  const replacedAtOf = (t: Transition) => t.invoice.payments.map((p) => p.replacedAt);
  const seen = transition(makeInvoice(), pays(mempool('a', AMOUNT, T0 + MINUTE)), T0 + MINUTE).invoice;
  const gone = T0 + 3 * DAY;

  test('it is stamped with the time Till learned it, not the first sighting', () => {
    assert.deepEqual(replacedAtOf(transition(seen, pays(replaced('a', AMOUNT, T0 + MINUTE)), gone)), [gone]);
  });
  test('while catching up too: now, not the time of the block being read (the node may have dropped it since)', () => {
    assert.deepEqual(replacedAtOf(transition(seen, heldAt(T0 + DAY, replaced('a', AMOUNT, T0 + MINUTE)), gone)), [gone]);
  });
  test('it keeps that time while it stays replaced, whatever the report says', () => {
    const first = transition(seen, pays(replaced('a', AMOUNT, T0 + MINUTE)), gone).invoice;
    const again = transition(first, pays({ ...replaced('a', AMOUNT, T0 + MINUTE), replacedAt: T0 }), gone + DAY);
    assert.deepEqual(replacedAtOf(again), [gone]);
  });
  test('back in the mempool it has none; replaced again, the new time', () => {
    const first = transition(seen, pays(replaced('a', AMOUNT, T0 + MINUTE)), gone).invoice;
    const back = transition(first, pays(mempool('a', AMOUNT, T0 + MINUTE)), gone + DAY);
    assert.deepEqual(replacedAtOf(back), [undefined]);
    assert.equal(watchUntil(back.invoice), null);
    assert.deepEqual(replacedAtOf(transition(back.invoice, pays(replaced('a', AMOUNT, T0 + MINUTE)), gone + 2 * DAY)), [gone + 2 * DAY]);
  });
});

// Every status against every kind of fact. A new payment on any status is
// recorded and reported; only pending moves.
const NEW_PAYMENT = mempool('f', 1_000, EXPIRES + DAY);
const PENDING = makeInvoice();
const matrix: Array<{
  name: string;
  invoice: Invoice;
  at: number;
  tick: string[];
  cancel: string[] | RegExp;
  payment: { status: InvoiceStatus; events: string[] };
}> = [
  { name: 'pending (before expiry)', invoice: PENDING, at: T0 + 5 * MINUTE, tick: [], cancel: ['cancelled'], payment: { status: 'pending', events: ['payment_detected:f'] } },
  { name: 'pending (past expiry, not yet ticked)', invoice: PENDING, at: EXPIRES + DAY, tick: ['expired'], cancel: /is expired/, payment: { status: 'expired', events: ['payment_detected:f', 'expired'] } },
  { name: 'paid', invoice: PAID, at: EXPIRES + DAY, tick: [], cancel: /is paid/, payment: { status: 'paid', events: ['payment_detected:f'] } },
  { name: 'late_paid', invoice: LATE_PAID, at: EXPIRES + DAY, tick: [], cancel: /is late_paid/, payment: { status: 'late_paid', events: ['payment_detected:f'] } },
  { name: 'expired (in the late window)', invoice: EXPIRED, at: EXPIRES + DAY, tick: [], cancel: /is expired/, payment: { status: 'expired', events: ['payment_detected:f'] } },
  { name: 'expired (fully)', invoice: EXPIRED, at: EXPIRES + LATE_WINDOW + DAY, tick: [], cancel: /is expired/, payment: { status: 'expired', events: ['payment_detected:f'] } },
  { name: 'cancelled', invoice: CANCELLED, at: EXPIRES + DAY, tick: [], cancel: /is cancelled/, payment: { status: 'cancelled', events: ['payment_detected:f'] } },
];

describe('transition: every status x every fact', () => {
  for (const row of matrix) {
    test(`${row.name}: tick`, () => {
      const result = transition(row.invoice, TICK, row.at);
      assert.deepEqual(describeEvents(result.events), row.tick);
      if (row.tick.length === 0) assert.deepEqual(result.invoice, row.invoice);
    });

    test(`${row.name}: cancel`, () => {
      if (Array.isArray(row.cancel)) {
        const result = transition(row.invoice, CANCEL, row.at);
        assert.equal(result.invoice.status, 'cancelled');
        assert.equal(result.invoice.cancelledAt, row.at);
        assert.deepEqual(describeEvents(result.events), row.cancel);
        return;
      }
      const pattern = row.cancel;
      assert.throws(
        () => transition(row.invoice, CANCEL, row.at),
        (err: unknown) =>
          err instanceof ApiError && err.code === 'invoice_not_cancellable' && err.status === 409 && pattern.test(err.message),
      );
    });

    test(`${row.name}: a new payment`, () => {
      const result = transition(row.invoice, pays(...row.invoice.payments, NEW_PAYMENT), row.at);
      assert.equal(result.invoice.status, row.payment.status);
      assert.deepEqual(describeEvents(result.events), row.payment.events);
      assert.deepEqual(result.invoice.payments.at(-1), NEW_PAYMENT);
    });

    test(`${row.name}: a new payment while the chain is still read up to its tip`, () => {
      const result = transition(row.invoice, catchingUp(...row.invoice.payments, NEW_PAYMENT), row.at);
      // Only the expiry waits; everything else is as for a new payment.
      const expected = row.payment.events.includes('expired') ? { status: row.invoice.status, events: row.payment.events.filter((e) => e !== 'expired') } : row.payment;
      assert.equal(result.invoice.status, expected.status);
      assert.deepEqual(describeEvents(result.events), expected.events);
    });
  }
});

describe('transition: input is never mutated', () => {
  const facts: Array<[string, Invoice, Fact, number]> = [
    ['payments on pending', makeInvoice({ payments: [mempool('a', 50_000, T0 + MINUTE)] }), pays(confirmed('a', 50_000, T0 + MINUTE), confirmed('b', 50_000, T0 + 2 * MINUTE)), T0 + 3 * MINUTE],
    ['tick that expires', makeInvoice({ payments: [mempool('a', 50_000, T0 + MINUTE)] }), TICK, EXPIRES],
    ['tick that changes nothing', PAID, TICK, EXPIRES],
    ['cancel', makeInvoice(), CANCEL, T0 + MINUTE],
    ['reversal', PAID, pays(), T0 + HOUR],
  ];
  for (const [name, invoice, fact, now] of facts) {
    test(name, () => {
      const before = structuredClone(invoice);
      const frozen = deepFreeze(structuredClone(invoice));
      const frozenFact = deepFreeze(structuredClone(fact));
      const result = transition(frozen, frozenFact, now);
      assert.deepEqual(frozen, before);
      assert.notEqual(result.invoice, frozen);
      assert.notEqual(result.invoice.payments, frozen.payments);
      result.invoice.metadata.changed = 'yes';
      assert.equal(frozen.metadata.changed, undefined);
    });
  }
});

describe('transition: a malformed payments fact is refused', () => {
  const good = mempool('a', 1_000, T0);
  const invalid: Array<[string, Payment[], RegExp]> = [
    ['the same outpoint twice', [good, { ...good }], /lists a{64}:0 twice/],
    ['an upper-case txid', [{ ...good, txid: 'A'.repeat(64) }], /txid/],
    ['a short txid', [{ ...good, txid: 'ab' }], /txid/],
    ['a negative vout', [{ ...good, vout: -1 }], /vout/],
    ['a zero amount', [{ ...good, amountSats: 0 }], /amountSats/],
    ['a fractional amount', [{ ...good, amountSats: 1.5 }], /amountSats/],
    ['an unknown status', [{ ...good, status: 'orphaned' as Payment['status'] }], /status/],
    ['confirmed without confirmations', [{ ...good, status: 'confirmed' }], /confirmed payment has confirmations/],
    ['mempool with confirmations', [{ ...good, confirmations: 2 }], /confirmed payment has confirmations/],
    ['a missing first sighting', [{ ...good, firstSeenAt: Number.NaN }], /firstSeenAt/],
    ['a coinbase in the mempool', [{ ...good, coinbase: true }], /coinbase is never in the mempool/],
  ];
  for (const [name, payments, message] of invalid) {
    test(name, () => {
      assert.throws(() => transition(makeInvoice(), pays(...payments), T0 + MINUTE), message);
    });
  }

  test('an outpoint whose amount changes', () => {
    const invoice = makeInvoice({ payments: [good] });
    assert.throws(() => transition(invoice, pays({ ...good, amountSats: 2_000 }), T0 + MINUTE), /changes the amount .* from 1000 to 2000/);
  });
});

describe('amounts', () => {
  const payments = [
    mempool('a', 10_000, T0),
    confirmed('b', 20_000, T0, 1),
    confirmed('c', 30_000, EXPIRES + DAY, 6),
    replaced('d', 40_000, T0),
  ];
  const valid: Array<[required: number, received: number, confirmedSats: number]> = [
    [0, 60_000, 60_000],
    [1, 60_000, 50_000],
    [6, 60_000, 30_000],
  ];
  for (const [required, received, confirmedSats] of valid) {
    test(`${required} confirmations required: received ${received}, confirmed ${confirmedSats}`, () => {
      const invoice = makeInvoice({ confirmationsRequired: required, payments });
      assert.equal(amountReceived(invoice), received);
      assert.equal(amountConfirmed(invoice), confirmedSats);
    });
  }
});

describe('amounts with coinbases: an immature one (under 100 confirmations) counts as unconfirmed', () => {
  const payments = [confirmed('a', 10_000, T0, 6), coinbase('b', 20_000, T0, 99), coinbase('c', 30_000, T0, 100)];
  const valid: Array<[required: number, confirmedSats: number]> = [
    [0, 60_000],
    [1, 40_000],
    [6, 40_000],
  ];
  for (const [required, confirmedSats] of valid) {
    test(`${required} confirmations required: received 60000, confirmed ${confirmedSats}`, () => {
      const invoice = makeInvoice({ confirmationsRequired: required, payments });
      assert.equal(amountReceived(invoice), 60_000);
      assert.equal(amountConfirmed(invoice), confirmedSats);
    });
  }
});

describe('isFullyExpired', () => {
  const valid: Array<[string, Invoice, number, boolean]> = [
    ['pending long past expiry', PENDING, EXPIRES + LATE_WINDOW + DAY, false],
    ['expired inside the window', EXPIRED, EXPIRES + LATE_WINDOW - 1, false],
    ['expired at the window end', EXPIRED, EXPIRES + LATE_WINDOW, true],
    ['expired late (window counted from expired_at)', makeInvoice({ status: 'expired', expiredAt: EXPIRES + DAY }), EXPIRES + LATE_WINDOW, false],
    ['cancelled long ago', CANCELLED, EXPIRES + 30 * DAY, false],
    ['paid long ago', PAID, EXPIRES + 30 * DAY, false],
  ];
  for (const [name, invoice, now, expected] of valid) {
    test(name, () => assert.equal(isFullyExpired(invoice, now), expected));
  }
});

describe('watchUntil', () => {
  const deep = confirmed('a', AMOUNT, T0 + MINUTE, 6);
  const valid: Array<[string, Invoice, number | null]> = [
    ['pending: open-ended', PENDING, null],
    ['expired: to the end of the late window', EXPIRED, EXPIRES + LATE_WINDOW],
    ['cancelled: a late window after cancelling', CANCELLED, T0 + 5 * MINUTE + LATE_WINDOW],
    ['expired with a payment still in the mempool: open-ended', { ...EXPIRED, payments: [mempool('a', AMOUNT, EXPIRES + LATE_WINDOW - MINUTE)] }, null],
    ['expired, the late payment confirmed: to the end of the late window', { ...EXPIRED, payments: [confirmed('a', AMOUNT, EXPIRES + LATE_WINDOW - MINUTE)] }, EXPIRES + LATE_WINDOW],
    ['cancelled with a payment still in the mempool: open-ended', { ...CANCELLED, payments: [mempool('a', AMOUNT, T0 + 6 * MINUTE)] }, null],
    ['cancelled with a replaced payment: 14 days after it was found replaced (it may still be mined)', { ...CANCELLED, payments: [{ ...replaced('a', AMOUNT, T0 + 6 * MINUTE), replacedAt: T0 + 3 * DAY }] }, T0 + 17 * DAY],
    ['cancelled with a payment replaced before Till kept that time: 14 days after it was first seen', { ...CANCELLED, payments: [replaced('a', AMOUNT, T0 + 6 * MINUTE)] }, T0 + 6 * MINUTE + 14 * DAY],
    ['cancelled with a coinbase whose block left the chain: 14 days after it was found replaced (a reorg back may restore its block)', { ...CANCELLED, payments: [{ ...replaced('a', AMOUNT, T0 + 6 * MINUTE), coinbase: true, replacedAt: T0 + 3 * DAY }] }, T0 + 17 * DAY],
    ['cancelled with a replaced payment, a longer late window: the late window', { ...CANCELLED, lateWindowMs: 30 * DAY, payments: [replaced('a', AMOUNT, T0 + 6 * MINUTE)] }, T0 + 5 * MINUTE + 30 * DAY],
    [
      'cancelled with a simulated payment (never mined): a late window after cancelling',
      { ...CANCELLED, payments: [{ ...mempool('a', AMOUNT, T0 + 6 * MINUTE), txid: syntheticTxid(CANCELLED.id, 0) }] },
      T0 + 5 * MINUTE + LATE_WINDOW,
    ],
    ['paid with a shallow payment: open-ended', PAID, null],
    ['paid with a payment back in mempool: open-ended', { ...PAID, payments: [mempool('a', AMOUNT, T0 + MINUTE)] }, null],
    ['paid, all payments 6 deep: a late window after paying', { ...PAID, payments: [deep] }, T0 + 10 * MINUTE + LATE_WINDOW],
    ['paid, all payments 6 deep, one replaced: 14 days after it was found replaced', { ...PAID, payments: [deep, { ...replaced('b', 5, T0), replacedAt: T0 + HOUR }] }, T0 + HOUR + 14 * DAY],
    ['paid with a shallow payment and a replaced one: open-ended', { ...PAID, payments: [...PAID.payments, replaced('b', 5, T0)] }, null],
    ['late_paid, all payments 6 deep', { ...LATE_PAID, payments: [deep] }, EXPIRES + DAY + LATE_WINDOW],
  ];
  for (const [name, invoice, expected] of valid) {
    test(name, () => assert.equal(watchUntil(invoice), expected));
  }
});

describe('joinUntil', () => {
  const valid: Array<[string, Invoice, number | null]> = [
    ['pending: to the end of the late window after expiry', PENDING, EXPIRES + LATE_WINDOW],
    ['pending with a late payment in the mempool: the same', { ...PENDING, payments: [mempool('a', AMOUNT, EXPIRES + MINUTE)] }, EXPIRES + LATE_WINDOW],
    ['pending with an on-time payment still counting: open-ended (it waits for it)', { ...PENDING, payments: [mempool('a', AMOUNT, T0 + MINUTE)] }, null],
    ['pending, underpaid on time: to the end of the late window after expiry (it expires on time)', { ...PENDING, payments: [confirmed('a', AMOUNT - 1, T0 + MINUTE, 3)] }, EXPIRES + LATE_WINDOW],
    ['pending with an on-time payment replaced: to the end of the late window after expiry', { ...PENDING, payments: [replaced('a', AMOUNT, T0 + MINUTE)] }, EXPIRES + LATE_WINDOW],
    [
      'pending, its wait for an on-time payment ended while catching up: the late window after that',
      { ...PENDING, waitEndedAt: EXPIRES + DAY, payments: [replaced('a', AMOUNT, T0 + MINUTE)] },
      EXPIRES + DAY + LATE_WINDOW,
    ],
    ['expired with a payment still in the mempool: the end of the late window all the same', { ...EXPIRED, payments: [mempool('a', AMOUNT, EXPIRES + LATE_WINDOW - MINUTE)] }, EXPIRES + LATE_WINDOW],
    ['cancelled with a payment still in the mempool: a late window after cancelling', { ...CANCELLED, payments: [mempool('a', AMOUNT, T0 + 6 * MINUTE)] }, T0 + 5 * MINUTE + LATE_WINDOW],
    ['paid with a shallow payment: a late window after paying', PAID, T0 + 10 * MINUTE + LATE_WINDOW],
    ['late_paid', LATE_PAID, EXPIRES + DAY + LATE_WINDOW],
  ];
  for (const [name, invoice, expected] of valid) {
    test(name, () => assert.equal(joinUntil(invoice), expected));
  }
});
