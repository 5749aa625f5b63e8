import type { Invoice, Payment } from './invoice.ts';

// How payments add up. A payment counts unless it was replaced (RBF or double
// spend). It is confirmed once it has the invoice's required confirmations; with
// 0 required, every counting payment (mempool included) is confirmed.

export function isCounting(payment: Payment): boolean {
  return payment.status !== 'replaced';
}

export function isConfirmed(payment: Payment, confirmationsRequired: number): boolean {
  return isCounting(payment) && payment.confirmations >= confirmationsRequired;
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
