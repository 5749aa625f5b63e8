import { toIso } from '../clock.ts';
import type { Invoice } from '../domain/invoice.ts';
import type { DomainEvent } from '../domain/invoice-state.ts';
import { invoiceView, paymentView } from '../domain/invoice-view.ts';
import { newId } from '../ids.ts';
import { addDeliveries } from '../webhooks/dispatcher.ts';
import type { Context } from './context.ts';

/**
 * Writes the events of a change and their deliveries, inside the caller's
 * transaction: the state change, its events and who must hear of them commit
 * together (no separate dispatch step, which cost a second write per event).
 * The webhook body (spec 6.2) is fixed here, with the invoice as it is after
 * the change, so every delivery of an event carries the same bytes. The
 * invoice is serialized once for all the events (and handed back, for a
 * response).
 */
export function recordEvents(ctx: Context, invoice: Invoice, events: readonly DomainEvent[], invoiceJson = JSON.stringify(invoiceView(invoice, ctx.baseUrl))): string {
  const now = ctx.clock.now();
  const createdAt = JSON.stringify(toIso(now));
  const endpoints = events.length > 0 ? ctx.repos.webhookEndpoints.listForStore(invoice.storeId) : [];
  for (const e of events) {
    const id = newId('evt', now);
    const payment = e.payment ? invoice.payments.find((p) => p.txid === e.payment!.txid && p.vout === e.payment!.vout) : undefined;
    const paymentJson = payment ? `,"payment":${JSON.stringify(paymentView(payment))}` : '';
    const body = `{"event_id":"${id}","event_type":${JSON.stringify(e.type)},"created_at":${createdAt},"livemode":${invoice.livemode},"data":{"invoice":${invoiceJson}${paymentJson}}}`;
    ctx.repos.events.insertDispatched({ id, type: e.type, storeId: invoice.storeId, invoiceId: invoice.id, livemode: invoice.livemode, createdAt: now, body });
    addDeliveries(ctx, { id, type: e.type, storeId: invoice.storeId }, invoice.callbackUrl, endpoints, now);
  }
  return invoiceJson;
}
