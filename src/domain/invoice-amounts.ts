import type { Invoice, Payment } from './invoice.ts';

// How payments add up. A payment counts unless it was replaced (RBF or double
// spend). It is confirmed once it has the invoice's required confirmations; with
// 0 required, every counting payment (mempool included) is confirmed. A
// coinbase is unconfirmed money until it is mature: consensus lets it be spent
// only after COINBASE_MATURITY confirmations, and a reorg that drops its block
// drops it (it never goes back to the mempool; only a reorg back to its block
// brings it back).

/** Confirmations before a coinbase output may be spent (Bitcoin Core's COINBASE_MATURITY). */
export const COINBASE_MATURITY = 100;

export function isCounting(payment: Payment): boolean {
  return payment.status !== 'replaced';
}

export function isConfirmed(payment: Payment, confirmationsRequired: number): boolean {
  return isCounting(payment) && payment.confirmations >= confirmationsNeeded(payment, confirmationsRequired);
}

/**
 * The confirmations at which a payment is confirmed: the invoice's, and for a
 * coinbase at least COINBASE_MATURITY, unless the invoice requires none (it
 * counts at once, as a mempool payment does).
 */
export function confirmationsNeeded(payment: Payment, confirmationsRequired: number): number {
  return payment.coinbase && confirmationsRequired > 0 ? Math.max(confirmationsRequired, COINBASE_MATURITY) : confirmationsRequired;
}

/** A coinbase in a block that cannot be spent yet: held like an unconfirmed payment. */
export function isImmatureCoinbase(payment: Payment): boolean {
  return payment.coinbase && payment.status === 'confirmed' && payment.confirmations < COINBASE_MATURITY;
}

/**
 * A payment that holds a paid invoice paid: it counts and, unless none are
 * required, is in a block (a coinbase: a mature one). Its depth does not
 * matter: a shallow reorg that leaves it in a block takes nothing back.
 */
export function holdsPaid(payment: Payment, confirmationsRequired: number): boolean {
  return isCounting(payment) && (confirmationsRequired === 0 || (payment.status === 'confirmed' && !isImmatureCoinbase(payment)));
}

/** Whether `payments` hold a paid `invoice` paid: what holds it (holdsPaid) covers its amount. */
export function coversPaid(payments: readonly Payment[], invoice: { amountSats: number; confirmationsRequired: number }): boolean {
  return sumSats(payments, (p) => holdsPaid(p, invoice.confirmationsRequired)) >= invoice.amountSats;
}

export function sumSats(payments: readonly Payment[], include: (payment: Payment) => boolean): number {
  let total = 0;
  for (const payment of payments) if (include(payment)) total += payment.amountSats;
  return total;
}

/** Every counting payment, on time or late (public `amount_received_sats`). */
export function amountReceived(invoice: Invoice): number {
  return sumSats(invoice.payments, isCounting);
}

/** Every counting payment with the required confirmations (public `amount_confirmed_sats`). */
export function amountConfirmed(invoice: Invoice): number {
  return sumSats(invoice.payments, (p) => isConfirmed(p, invoice.confirmationsRequired));
}
