import { toIso } from '../../clock.ts';
import type { StoredInvoice } from '../../db/invoices.ts';
import type { Invoice } from '../../domain/invoice.ts';
import { isFullyExpired } from '../../domain/invoice-state.ts';
import { invoiceView } from '../../domain/invoice-view.ts';
import type { Store } from '../../domain/store.ts';
import type { Context } from '../../services/context.ts';

/**
 * The public checkout snapshot: the body of GET /pay/invoices/:id and the data
 * of every stream message. It is the public invoice without `metadata` and
 * `callback_url` (merchants put order details and internal URLs there, and the
 * invoice id is a link a buyer may share), plus the store's branding, the
 * server's clock, so a countdown does not trust the buyer's clock, and whether
 * it is final.
 */
export function checkoutView(inv: StoredInvoice, store: Store, baseUrl: string, now: number) {
  const { metadata: _metadata, callback_url: _callbackUrl, ...view } = invoiceView(inv, baseUrl);
  return {
    ...view,
    store: { id: store.id, name: store.name, logo_url: store.logoUrl, brand_color: store.brandColor },
    server_time: toIso(now),
    // Whether anything the buyer waits for can still change: an expired invoice's late window is not in the
    // snapshot, and a page that polls could not tell "paid too late" from a late payment still confirming.
    final: isFinalForCheckout(inv, now),
  };
}

export type CheckoutView = ReturnType<typeof checkoutView>;

/** The snapshot of a stored invoice as of now, its store's branding read now. */
export function currentCheckoutView(ctx: Context, inv: StoredInvoice): CheckoutView {
  const store = ctx.repos.stores.get(inv.storeId);
  if (!store) throw new Error(`invoice ${inv.id} names a missing store ${inv.storeId}`);
  return checkoutView(inv, store, ctx.baseUrl, ctx.clock.now());
}

/**
 * Nothing the buyer waits for can change any more, so streams close: paid,
 * late_paid, cancelled, and expired once the late window is over. An expired
 * invoice inside its late window is not final: a late payment still turns it
 * into late_paid.
 */
export function isFinalForCheckout(inv: Invoice, now: number): boolean {
  switch (inv.status) {
    case 'paid':
    case 'late_paid':
    case 'cancelled':
      return true;
    case 'expired':
      return isFullyExpired(inv, now);
    case 'pending':
      return false;
  }
}
