import { ApiError } from './errors.ts';
import type { InvoiceEventType } from './event-types.ts';
import { PAYMENT_STATUSES, type Invoice, type Payment } from './invoice.ts';
import { coversPaid, holdsPaid, isConfirmed, isCounting, sumSats } from './invoice-amounts.ts';
import { isSimulatedPayment } from './synthetic-payment.ts';

export { amountConfirmed, amountReceived } from './invoice-amounts.ts';

// The invoice state machine (DESIGN.md "Invoice lifecycle"). One pure function
// takes what happened and the time, and returns the next invoice and the events
// to write in the same transaction. Both the chain watcher and simulate use it.
//
// Decisions the design leaves open:
// - expired_at is the moment the invoice expired by the rules, not when a worker
//   noticed: expires_at, even when learned late (after a restart). An invoice
//   that waited past expires_at for on-time payments and then lost them (RBF,
//   reorg) expires at the moment that is learned (now, or while catching up
//   the time of the block that shows it: kept in waitEndedAt until the
//   catch-up lets it expire).
// - The late window is [expired_at, expired_at + late window): late payments must
//   be seen and confirmed inside it; on-time payments confirmed in it count too.
//   Blocks read while catching up are judged at their own time (`heldAt`): a
//   late payment confirmed inside the window while Till was down is late_paid,
//   as a running Till would have made it.
// - A paid invoice "holds" a payment that is in a block (or, with 0 confirmations
//   required, counting at all). A shallow reorg that leaves it in a block with
//   fewer confirmations is not a reversal; back to mempool, replaced or gone is.
// - A coinbase with fewer than COINBASE_MATURITY (100) confirmations is held
//   and counted like an unconfirmed payment (it cannot be spent yet, and a
//   reorg loses it, unless a reorg back restores its block): it pays an invoice that requires 0 confirmations
//   at once, any other once it has both the required confirmations and 100.
//   One seen before expires_at keeps the invoice waiting for it, as any
//   on-time payment confirmed late does.
// - firstSeenAt only moves earlier: a watcher that re-learns a payment after a
//   restart cannot turn an on-time payment into a late one.

export type Fact =
  /**
   * The complete current list of the invoice's payments, replacing the
   * previous one. `catchingUp`: the chain is still being read up to its tip
   * (after a start or an outage), so the invoice does not expire on this fact
   * (a block not read yet may hold the rest of an on-time payment) unless its
   * confirmed payments already pay it in full, late. `heldAt`: when the chain
   * held these payments, if before now (the time of a block read while
   * catching up); the late window is judged as of then.
   */
  | { kind: 'payments'; payments: Payment[]; catchingUp?: boolean; heldAt?: number }
  /** Time passed (expiry worker). */
  | { kind: 'tick' }
  /** POST /v1/invoices/:id/cancel. */
  | { kind: 'cancel' };

export interface DomainEvent {
  type: InvoiceEventType;
  /** The payment a payment_detected, payment_reversed or payment_restored is about. */
  payment?: { txid: string; vout: number };
}

export interface Transition {
  invoice: Invoice;
  events: DomainEvent[];
}

/** Confirmations after which a paid invoice's payments are treated as final. */
export const REORG_SAFE_CONFIRMATIONS = 6;

export function transition(invoice: Invoice, fact: Fact, now: number): Transition {
  switch (fact.kind) {
    case 'payments':
      // Never later than now, nor before the invoice existed (a block's timestamp may be off).
      return applyPayments(invoice, fact.payments, { at: Math.max(invoice.createdAt, Math.min(now, fact.heldAt ?? now)), catchingUp: fact.catchingUp ?? false }, now);
    case 'tick':
      return settle(invoice.payments, structuredClone(invoice), { at: now, catchingUp: false });
    case 'cancel':
      return cancel(invoice, now);
  }
}

/** Expired and past the late window: nothing can change it any more (HTTP: 410 invoice_expired). */
export function isFullyExpired(invoice: Invoice, now: number): boolean {
  return invoice.status === 'expired' && now >= lateWindowEnd(invoice);
}

/**
 * How long a replaced payment may still be mined: nodes that kept it drop it
 * after Core's default -mempoolexpiry (336 hours) at the latest.
 */
export const REPLACED_MAY_BE_MINED_MS = 14 * 24 * 3600_000;

/**
 * Until when the chain watcher must watch the invoice's address: it watches
 * while `watchUntil` is null (no end yet) or later than now. Beyond joinUntil:
 * - pending: null; the expiry worker ends it, and it may wait for confirmations.
 * - expired, cancelled: null while a payment is still in the mempool, so the
 *   block that mines it is seen; otherwise the mempool check, finding it gone,
 *   would take it for replaced, and money sent would vanish from the invoice.
 * - paid, late_paid: null while a counting payment is shallower than
 *   REORG_SAFE_CONFIRMATIONS (a reorg could still reverse it).
 * - and for REPLACED_MAY_BE_MINED_MS after a payment was found replaced:
 *   gone from Till's node (evicted, or a reorg's loser), it may still be mined,
 *   and then it counts again. Counted from when Till found it gone, not from
 *   its first sighting, which a fee bump inherits from what it replaced: other
 *   nodes took the bump when it was sent, which may be days later. A
 *   coinbase too: it is never mined again in another block, but a reorg back
 *   to the branch that holds its block (that branch overtaking again) puts it
 *   back on the best chain, and then it counts again.
 */
export function watchUntil(invoice: Invoice): number | null {
  const end = watchEnd(invoice);
  if (end === null) return null;
  return invoice.payments.reduce(
    (until, p) => (p.status === 'replaced' && !isSimulatedPayment(invoice, p.txid) ? Math.max(until, (p.replacedAt ?? p.firstSeenAt) + REPLACED_MAY_BE_MINED_MS) : until),
    end,
  );
}

function watchEnd(invoice: Invoice): number | null {
  switch (invoice.status) {
    case 'pending':
      return null;
    case 'expired':
    case 'cancelled':
      return hasMempoolPayment(invoice) ? null : joinUntil(invoice);
    case 'paid':
    case 'late_paid': {
      const safeDepth = Math.max(invoice.confirmationsRequired, REORG_SAFE_CONFIRMATIONS);
      const shallow = invoice.payments.some((p) => isCounting(p) && p.confirmations < safeDepth);
      return shallow ? null : joinUntil(invoice);
    }
  }
}

/**
 * Until when a new payment may join the invoice (first seen before then): the
 * window a running Till watches for new money, which watching a known
 * payment longer does not stretch. A Till catching up after downtime uses it
 * to take no more than a running one would have.
 * - pending: to the end of the late window after expires_at, unless on-time
 *   payments that still count cover the amount (the invoice waits for them to
 *   confirm, and its window starts later); an underpaid one expires on time.
 * - expired: to the end of the late window.
 * - cancelled: cancelled_at + late window, so money sent anyway is reported for refund.
 * - paid, late_paid: paid_at + late window, so a duplicate payment is reported for refund.
 */
export function joinUntil(invoice: Invoice): number | null {
  switch (invoice.status) {
    case 'pending': {
      const waiting = sumSats(invoice.payments, (p) => isCounting(p) && p.firstSeenAt < invoice.expiresAt) >= invoice.amountSats;
      return waiting ? null : (invoice.waitEndedAt ?? invoice.expiresAt) + invoice.lateWindowMs;
    }
    case 'expired':
      return lateWindowEnd(invoice);
    case 'cancelled':
      return (invoice.cancelledAt ?? invoice.createdAt) + invoice.lateWindowMs;
    case 'paid':
    case 'late_paid':
      return (invoice.paidAt ?? invoice.createdAt) + invoice.lateWindowMs;
  }
}

/** A payment on its way into a block; a simulated one never gets there (the watcher leaves it alone). */
function hasMempoolPayment(invoice: Invoice): boolean {
  return invoice.payments.some((p) => p.status === 'mempool' && !isSimulatedPayment(invoice, p.txid));
}

function lateWindowEnd(invoice: Invoice): number {
  return (invoice.expiredAt ?? invoice.expiresAt) + invoice.lateWindowMs;
}

/** The moment a fact is judged at (now, or a block's time while catching up), and whether the chain is being caught up with. */
interface Judged {
  at: number;
  catchingUp: boolean;
}

function applyPayments(invoice: Invoice, reported: Payment[], judged: Judged, now: number): Transition {
  const payments = mergePayments(invoice.payments, reported, now);
  const known = new Set(invoice.payments.map(outpointKey));
  // One event per transaction, naming its first new output: an event per output, each
  // carrying the invoice with all of them, grew as their square (1,000 outputs: 200 MB).
  const firstNew = new Map<string, Payment>();
  for (const p of payments) if (!known.has(outpointKey(p)) && !firstNew.has(p.txid)) firstNew.set(p.txid, p);
  const detected: DomainEvent[] = [...firstNew.values()].map((p) => ({ type: 'invoice.payment_detected', payment: outpointOf(p) }));
  const settled = settle(invoice.payments, { ...structuredClone(invoice), payments }, judged);
  const covering = findCoverageChange(invoice, settled.invoice);
  return {
    invoice: settled.invoice,
    events: [...detected, ...settled.events, ...(covering ? [covering] : [])],
  };
}

/**
 * Moves a pending invoice to paid or expired, and an expired one to late_paid,
 * as the payments and the time allow. `previousPayments` tells whether the
 * invoice was waiting for on-time payments before this fact.
 */
function settle(previousPayments: readonly Payment[], invoice: Invoice, { at, catchingUp }: Judged): Transition {
  const events: DomainEvent[] = [];
  let next = invoice;
  if (next.status === 'pending') {
    const onTime = (p: Payment) => p.firstSeenAt < next.expiresAt;
    const required = next.confirmationsRequired;
    // Catching up, only full payment in blocks read so far decides now: nothing unread can make it less
    // than paid, nor on time (a later block's payments are later). Not a mempool payment, counted as
    // confirmed with 0 required: it is read before the blocks, and one of them may hold an on-time payment.
    const mayExpire = !catchingUp || sumSats(next.payments, (p) => p.status === 'confirmed' && isConfirmed(p, required)) >= next.amountSats;
    const covered = sumSats(next.payments, (p) => onTime(p) && isCounting(p)) >= next.amountSats;
    const waited = sumSats(previousPayments, (p) => onTime(p) && isCounting(p)) >= next.amountSats;
    if (sumSats(next.payments, (p) => onTime(p) && isConfirmed(p, required)) >= next.amountSats) {
      next = { ...next, status: 'paid', paidAt: at };
      events.push({ type: 'invoice.paid' });
    } else if (mayExpire && at >= next.expiresAt && !covered) {
      // Its wait ended now, or while catching up (waitEndedAt); else it expired on time.
      next = { ...next, status: 'expired', expiredAt: waited ? at : Math.min(at, next.waitEndedAt ?? next.expiresAt) };
      events.push({ type: 'invoice.expired' });
    } else if (!covered && waited && at >= next.expiresAt) {
      // Catching up: the fact after the catch-up no longer shows what it waited for.
      next = { ...next, waitEndedAt: at };
    }
    if (next.status !== 'pending' || covered) next = withoutWaitEnded(next);
  }
  if (next.status === 'expired') {
    // Payments are seen no later than they are held, so inside the window they were seen inside it too.
    const required = next.confirmationsRequired;
    if (at < lateWindowEnd(next) && sumSats(next.payments, (p) => isConfirmed(p, required)) >= next.amountSats) {
      next = { ...next, status: 'late_paid', paidAt: Math.max(at, next.expiredAt ?? at) };
      events.push({ type: 'invoice.late_paid' });
    }
  }
  return { invoice: next, events };
}

/** Only a pending invoice short of the on-time payments it waited for has a waitEndedAt. */
function withoutWaitEnded(invoice: Invoice): Invoice {
  if (invoice.waitEndedAt == null) return invoice;
  const { waitEndedAt: _ended, ...rest } = invoice;
  return rest;
}

function cancel(invoice: Invoice, now: number): Transition {
  // Time first: a pending invoice whose expiry the worker has not applied yet is expired.
  const current = settle(invoice.payments, structuredClone(invoice), { at: now, catchingUp: false }).invoice;
  if (current.status !== 'pending') {
    throw new ApiError(
      'invoice_not_cancellable',
      `Invoice ${invoice.id} is ${current.status}; only a pending invoice can be cancelled.`,
    );
  }
  return {
    invoice: { ...withoutWaitEnded(current), status: 'cancelled', cancelledAt: now },
    events: [{ type: 'invoice.cancelled' }],
  };
}

/**
 * A paid invoice whose held payments stop covering the amount in this fact
 * (payment_reversed), or cover it again after that (payment_restored: mined
 * again after a reorg, back after an eviction, or new money), so a merchant
 * who held the order on the one hears when to release it. Both by one rule:
 * for each reversal, at most one restoration.
 */
function findCoverageChange(before: Invoice, after: Invoice): DomainEvent | null {
  if (before.status !== 'paid' && before.status !== 'late_paid') return null;
  const held = (p: Payment) => holdsPaid(p, before.confirmationsRequired);
  const [was, is] = [coversPaid(before.payments, before), coversPaid(after.payments, before)];
  if (was === is) return null;
  // The payment that went, or one that came back (held now, not before).
  const [from, to] = was ? [before.payments, after.payments] : [after.payments, before.payments];
  const other = new Set(to.filter(held).map(outpointKey));
  const named = from.find((p) => held(p) && !other.has(outpointKey(p)));
  return { type: was ? 'invoice.payment_reversed' : 'invoice.payment_restored', ...(named ? { payment: outpointOf(named) } : {}) };
}

/**
 * Validates the reported list, keeps each payment's earliest sighting, and
 * stamps a payment found replaced with the time Till learned it (now, also
 * while catching up: the node may have dropped it any time before).
 */
function mergePayments(previous: readonly Payment[], reported: readonly Payment[], now: number): Payment[] {
  const byOutpoint = new Map(previous.map((p) => [outpointKey(p), p]));
  const seen = new Set<string>();
  return reported.map((payment) => {
    const key = outpointKey(payment);
    assertPayment(payment, key);
    if (seen.has(key)) throw new Error(`payments fact lists ${key} twice`);
    seen.add(key);
    const earlier = byOutpoint.get(key);
    if (earlier && earlier.amountSats !== payment.amountSats) {
      throw new Error(`payments fact changes the amount of ${key} from ${earlier.amountSats} to ${payment.amountSats}`);
    }
    const { replacedAt: _reported, ...merged } = payment;
    merged.firstSeenAt = earlier ? Math.min(earlier.firstSeenAt, payment.firstSeenAt) : payment.firstSeenAt;
    if (payment.status !== 'replaced') return merged;
    return { ...merged, replacedAt: earlier?.status === 'replaced' ? (earlier.replacedAt ?? earlier.firstSeenAt) : now };
  });
}

// The watcher is trusted code, but a bad payment would silently misstate money:
// fail loudly (a plain Error is an internal error, not a client's fault).
const PAYMENT_CHECKS: ReadonlyArray<[problem: string, holds: (p: Payment) => boolean]> = [
  ['txid is not 64 lower-case hex characters', (p) => /^[0-9a-f]{64}$/.test(p.txid)],
  ['vout is not a non-negative integer', (p) => Number.isSafeInteger(p.vout) && p.vout >= 0],
  ['amountSats is not a positive integer', (p) => Number.isSafeInteger(p.amountSats) && p.amountSats > 0],
  ['status is unknown', (p) => PAYMENT_STATUSES.includes(p.status)],
  ['confirmations is not a non-negative integer', (p) => Number.isSafeInteger(p.confirmations) && p.confirmations >= 0],
  ['only a confirmed payment has confirmations', (p) => (p.status === 'confirmed') === p.confirmations > 0],
  ['a coinbase is never in the mempool', (p) => !(p.coinbase && p.status === 'mempool')],
  ['firstSeenAt is not a time', (p) => Number.isFinite(p.firstSeenAt)],
];

function assertPayment(payment: Payment, key: string): void {
  const failed = PAYMENT_CHECKS.find(([, holds]) => !holds(payment));
  if (failed) throw new Error(`invalid payment ${key}: ${failed[0]}`);
}

/** A payment's outpoint as one string: how payments are told apart. */
export function outpointKey(p: Payment): string {
  return `${p.txid}:${p.vout}`;
}

function outpointOf(p: Payment): { txid: string; vout: number } {
  return { txid: p.txid, vout: p.vout };
}
