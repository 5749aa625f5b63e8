import { toIso } from '../clock.ts';
import type { Invoice } from '../domain/invoice.ts';
import type { DomainEvent } from '../domain/invoice-state.ts';
import { invoiceView } from '../domain/invoice-view.ts';
import { newId } from '../ids.ts';
import type { Context } from './context.ts';

/**
 * Writes the outbox rows for a change, inside the caller's transaction. The
 * webhook body (spec 6.2) is fixed here, with the invoice as it is after the
 * change, so every delivery of an event carries the same bytes. The invoice
 * is serialized once for all the events (and handed back, for a response).
 */
export function recordEvents(ctx: Context, invoice: Invoice, events: readonly DomainEvent[], invoiceJson = JSON.stringify(invoiceView(invoice, ctx.baseUrl))): string {
  const now = ctx.clock.now();
  const createdAt = JSON.stringify(toIso(now));
  for (const e of events) {
    const id = newId('evt', now);
    const payment = e.payment ? invoice.payments.find((p) => p.txid === e.payment!.txid && p.vout === e.payment!.vout) : undefined;
    const paymentJson = payment
      ? `,"payment":${JSON.stringify({ txid: payment.txid, vout: payment.vout, amount_sats: payment.amountSats, status: payment.status })}`
      : '';
    const body = `{"event_id":"${id}","event_type":${JSON.stringify(e.type)},"created_at":${createdAt},"livemode":${invoice.livemode},"data":{"invoice":${invoiceJson}${paymentJson}}}`;
    ctx.repos.events.insert({ id, type: e.type, storeId: invoice.storeId, invoiceId: invoice.id, livemode: invoice.livemode, createdAt: now, body });
  }
  return invoiceJson;
}
