import { toIso, toIsoOrNull } from '../clock.ts';
import type { Invoice, Payment } from './invoice.ts';
import { amountConfirmed, amountReceived } from './invoice-state.ts';
import { formatCents, satsToBtcString } from './money.ts';

/** BIP21 payment URI; the amount is exact (8 decimals from integer sats). */
export function paymentUri(address: string, sats: number): string {
  return `bitcoin:${address}?amount=${satsToBtcString(sats)}`;
}

/**
 * The public invoice shape (DESIGN.md): returned by create, fetch and list,
 * and carried as data.invoice in webhooks. baseUrl makes checkout_url.
 */
export function invoiceView(inv: Invoice, baseUrl: string) {
  return {
    id: inv.id,
    object: 'invoice' as const,
    livemode: inv.livemode,
    store_id: inv.storeId,
    status: inv.status,
    amount_sats: inv.amountSats,
    amount: inv.fiat ? formatCents(inv.fiat.amountCents) : null,
    currency: inv.fiat?.currency ?? null,
    rate: inv.fiat
      ? { usd_per_btc: formatCents(inv.fiat.rateCentsPerBtc), source: inv.fiat.rateSource, fetched_at: toIso(inv.fiat.rateFetchedAt) }
      : null,
    address: inv.address,
    payment_uri: paymentUri(inv.address, inv.amountSats),
    amount_received_sats: amountReceived(inv),
    amount_confirmed_sats: amountConfirmed(inv),
    confirmations_required: inv.confirmationsRequired,
    payments: inv.payments.map(paymentView),
    expires_at: toIso(inv.expiresAt),
    created_at: toIso(inv.createdAt),
    paid_at: toIsoOrNull(inv.paidAt),
    cancelled_at: toIsoOrNull(inv.cancelledAt),
    expired_at: toIsoOrNull(inv.expiredAt),
    metadata: inv.metadata,
    callback_url: inv.callbackUrl,
    checkout_url: `${baseUrl}/checkout/${inv.id}`,
  };
}

export type InvoiceView = ReturnType<typeof invoiceView>;

/** One entry of the public invoice's payments; also a webhook's data.payment. */
export function paymentView(p: Payment) {
  return {
    txid: p.txid,
    vout: p.vout,
    amount_sats: p.amountSats,
    confirmations: p.confirmations,
    block_height: p.blockHeight,
    status: p.status,
    coinbase: p.coinbase,
    first_seen_at: toIso(p.firstSeenAt),
  };
}
