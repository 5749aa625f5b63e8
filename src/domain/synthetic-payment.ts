import { createHash } from 'node:crypto';
import type { Invoice } from './invoice.ts';

// The payments simulate makes up (test mode) carry txids no chain has, so
// the chain's code can tell them apart and leave them alone.

/**
 * Synthetic txid for the n-th simulated payment of an invoice: sha256 of a
 * labelled string, so it is deterministic and cannot be a real transaction.
 */
export function syntheticTxid(invoiceId: string, n: number): string {
  return createHash('sha256').update(`till-simulated-payment:${invoiceId}:${n}`).digest('hex');
}

/** True for a payment simulate made up: it exists on no chain, so the chain watcher leaves it alone. */
export function isSimulatedPayment(invoice: Invoice, txid: string): boolean {
  for (let n = 0; n <= invoice.payments.length; n++) if (syntheticTxid(invoice.id, n) === txid) return true;
  return false;
}
