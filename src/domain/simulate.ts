import { ApiError } from './errors.ts';
import type { Invoice, Payment } from './invoice.ts';
import { amountReceived, confirmationsNeeded, coversPaid, isCounting, sumSats } from './invoice-amounts.ts';
import { isFullyExpired, transition, type Transition } from './invoice-state.ts';
import { syntheticTxid } from './synthetic-payment.ts';

// Test-mode simulation (DESIGN.md "Simulate"): each event is turned into the
// fact the chain or the clock would produce and run through the same
// transition(). What each event does per status:
//
//   event            pending                      paid, late_paid   cancelled        expired, in window  fully expired
//   payment_detected a mempool payment of what is missing (the full amount once covered; or `amountSats`) ... 410 expired
//   paid             confirm + top up -> paid     409 already_paid  409 not_cancel.  410 expired         410 expired
//   expired          expiry moved to now          409 already_paid  409 not_cancel.  410 expired         410 expired
//   late_paid        expire, then late payment    409 already_paid  409 not_cancel.  late payment        410 expired
//   payment_reversed 409 not_paid                 reverse (below)   409 not_paid     409 not_paid        409 not_paid
//   payment_restored 409 not_paid                 restore (below)   409 not_paid     409 not_paid        409 not_paid
//
// - A cancelled invoice is final: the spec's 409 for "already paid, late_paid,
//   cancelled or expired" is invoice_not_cancellable; no other code says it.
//   A payment to it is still recorded (DESIGN: for a refund), as on the chain.
// - A fully expired invoice is no longer watched: no payment can reach it
//   (spec 3.1: 410 invoice_expired), not even a simulated one.
// - A pending invoice past expires_at is first brought up to date: if it has
//   expired, `paid` answers 410 like any expired invoice.
// - A pending invoice whose on-time payments cover the amount but wait for
//   confirmations cannot expire (the rules make it wait): `expired` and
//   `late_paid` answer 409 invoice_already_paid; `paid` confirms them.
// - `expired` moves expires_at forward to now instead of dating the expiry in
//   the future, so expires_at, expired_at and the late window stay truthful.
// - Confirmed synthetic payments have the invoice's required confirmations (at
//   least 1) and no block height.
// - payment_reversed and payment_restored exist so a merchant can try the
//   handling of the two events a paid invoice can still send (a double spend,
//   a reorg) before the chain does it to them. A paid invoice stays paid
//   (DESIGN.md lifecycle); reversed, its payments are `replaced` and it is
//   held by nothing (409 invoice_not_paid for a second reversal); restored,
//   they are confirmed again (409 invoice_already_paid while they hold it).

export const SIMULATED_EVENTS = ['payment_detected', 'paid', 'late_paid', 'expired', 'payment_reversed', 'payment_restored'] as const;
export type SimulatedEvent = (typeof SIMULATED_EVENTS)[number];

/** `amountSats`: what a simulated payment_detected pays (an underpayment, an overpayment), instead of what is missing. */
export function simulate(invoice: Invoice, event: SimulatedEvent, now: number, opts: { amountSats?: number } = {}): Transition {
  if (invoice.livemode) {
    throw new ApiError('test_mode_only', `Invoice ${invoice.id} is live; only test invoices can be simulated.`);
  }
  switch (event) {
    case 'payment_detected':
      return detectPayment(invoice, now, opts.amountSats);
    case 'paid':
      return payOnTime(invoice, now);
    case 'expired':
      return expireNow(invoice, now);
    case 'late_paid':
      return payLate(invoice, now);
    case 'payment_reversed':
      return reversePayments(invoice, now);
    case 'payment_restored':
      return restorePayments(invoice, now);
  }
}

function detectPayment(invoice: Invoice, now: number, given?: number): Transition {
  if (isFullyExpired(transition(invoice, { kind: 'tick' }, now).invoice, now)) throw refuse(invoice, 'payment_detected', now);
  const missing = invoice.amountSats - amountReceived(invoice);
  // Once covered, another payment is a buyer paying twice (a refund to test).
  const amountSats = given ?? (missing > 0 ? missing : invoice.amountSats);
  const payments = addSyntheticPayment(invoice.payments, invoice.id, amountSats, 0, now);
  return transition(invoice, { kind: 'payments', payments }, now);
}

function payOnTime(invoice: Invoice, now: number): Transition {
  const current = transition(invoice, { kind: 'tick' }, now).invoice;
  if (current.status !== 'pending') throw refuse(current, 'paid', now);
  return transition(invoice, { kind: 'payments', payments: confirmAndTopUp(invoice, now) }, now);
}

function expireNow(invoice: Invoice, now: number, event: SimulatedEvent = 'expired'): Transition {
  if (invoice.status !== 'pending') throw refuse(invoice, event, now);
  // Expiry is pulled back to now, but never before a payment already seen:
  // one detected in this very millisecond was on time.
  const lastSeen = Math.max(-Infinity, ...invoice.payments.map((p) => p.firstSeenAt));
  const due = { ...invoice, expiresAt: Math.min(invoice.expiresAt, Math.max(now, lastSeen + 1)) };
  const result = transition(due, { kind: 'tick' }, Math.max(now, due.expiresAt));
  if (result.invoice.status === 'pending') throw refuseWaiting(invoice, event);
  return result;
}

function payLate(invoice: Invoice, now: number): Transition {
  const expiry = invoice.status === 'pending' ? expireNow(invoice, now, 'late_paid') : { invoice, events: [] };
  const expired = expiry.invoice;
  if (expired.status !== 'expired' || isFullyExpired(expired, now)) throw refuse(expired, 'late_paid', now);
  const at = Math.max(now, expired.expiresAt);
  const paid = transition(expired, { kind: 'payments', payments: confirmAndTopUp(expired, at) }, at);
  return { invoice: paid.invoice, events: [...expiry.events, ...paid.events] };
}

/** A paid invoice held by its payments: each of those is double-spent away (replaced), as a double spend would leave it. */
function reversePayments(invoice: Invoice, now: number): Transition {
  if (!isPaid(invoice)) throw notPaid(invoice, 'payment_reversed');
  if (!coversPaid(invoice.payments, invoice)) {
    throw new ApiError('invoice_not_paid', `Invoice ${invoice.id} is ${invoice.status} but its payments no longer hold it: they were reversed already (simulate payment_restored brings them back).`);
  }
  const payments = invoice.payments.map((p): Payment => (isCounting(p) ? { ...p, status: 'replaced', confirmations: 0, blockHeight: null } : p));
  return transition(invoice, { kind: 'payments', payments }, now);
}

/** A paid invoice its payments no longer hold: those replaced or back in the mempool are mined (again), with what is missing. */
function restorePayments(invoice: Invoice, now: number): Transition {
  if (!isPaid(invoice)) throw notPaid(invoice, 'payment_restored');
  if (coversPaid(invoice.payments, invoice)) {
    throw new ApiError('invoice_already_paid', `Invoice ${invoice.id} is ${invoice.status} and its payments hold it: nothing to restore (simulate payment_reversed first).`);
  }
  const unreplaced = invoice.payments.map((p): Payment => (p.status === 'replaced' ? { ...p, status: 'mempool' } : p));
  return transition(invoice, { kind: 'payments', payments: confirmAndTopUp({ ...invoice, payments: unreplaced }, now) }, now);
}

function isPaid(invoice: Invoice): boolean {
  return invoice.status === 'paid' || invoice.status === 'late_paid';
}

function notPaid(invoice: Invoice, event: SimulatedEvent): ApiError {
  return new ApiError('invoice_not_paid', `Invoice ${invoice.id} is ${invoice.status}; simulate ${event} needs a paid invoice.`);
}

/** Confirms every counting payment and adds a confirmed one for what is missing. */
function confirmAndTopUp(invoice: Invoice, now: number): Payment[] {
  const confirmations = Math.max(invoice.confirmationsRequired, 1);
  const confirmed = invoice.payments.map((p): Payment =>
    // A coinbase is confirmed only once mature (invoice-amounts.ts).
    isCounting(p) ? { ...p, status: 'confirmed', confirmations: Math.max(p.confirmations, confirmations, confirmationsNeeded(p, invoice.confirmationsRequired)) } : p,
  );
  const missing = invoice.amountSats - sumSats(confirmed, isCounting);
  return missing > 0 ? addSyntheticPayment(confirmed, invoice.id, missing, confirmations, now) : confirmed;
}

function addSyntheticPayment(
  payments: Payment[],
  invoiceId: string,
  amountSats: number,
  confirmations: number,
  now: number,
): Payment[] {
  const taken = new Set(payments.map((p) => p.txid));
  let n = payments.length;
  while (taken.has(syntheticTxid(invoiceId, n))) n++; // at most payments.length steps
  const payment: Payment = {
    txid: syntheticTxid(invoiceId, n),
    vout: 0,
    amountSats,
    status: confirmations > 0 ? 'confirmed' : 'mempool',
    confirmations,
    blockHeight: null,
    coinbase: false,
    firstSeenAt: now,
  };
  return [...payments, payment];
}

function refuse(invoice: Invoice, event: SimulatedEvent, now: number): ApiError {
  const subject = `Invoice ${invoice.id} is ${invoice.status}`;
  switch (invoice.status) {
    case 'paid':
    case 'late_paid':
      return new ApiError('invoice_already_paid', `${subject}; simulate ${event} needs an unpaid invoice.`);
    case 'expired':
      return isFullyExpired(invoice, now)
        ? new ApiError('invoice_expired', `${subject} and past its late window: no payment reaches it any more (simulate ${event} refused).`)
        : new ApiError('invoice_expired', `${subject}; simulate ${event} needs a pending invoice (late_paid: one inside its late window).`);
    default:
      return new ApiError('invoice_not_cancellable', `${subject}; a ${invoice.status} invoice is final.`);
  }
}

function refuseWaiting(invoice: Invoice, event: SimulatedEvent): ApiError {
  return new ApiError(
    'invoice_already_paid',
    `Invoice ${invoice.id} is covered by on-time payments waiting for confirmations, so it cannot expire; ` +
      `simulate paid confirms them (simulate ${event} refused).`,
  );
}
