import type { EventRecord } from '../db/events.ts';
import type { InvoiceLookup, StoredInvoice } from '../db/invoices.ts';
import type { DeliveryRecord } from '../db/webhook-deliveries.ts';
import { ApiError } from '../domain/errors.ts';
import { isId } from '../ids.ts';
import type { Context } from './context.ts';
import { getStore } from './stores.ts';
import { MAX_ENDPOINTS_PER_STORE } from './webhooks.ts';

// For the operator answering "I paid, where is my order?" (`till invoices`):
// an invoice with everything that happened to it, and invoices found by what
// a buyer or the shop has in hand. Works on the database, any store, either
// mode, no API key: the CLI is the admin's.

export interface InvoiceHistory {
  invoice: StoredInvoice;
  /** Oldest first, each with its webhook deliveries. */
  events: Array<{ event: EventRecord; deliveries: DeliveryRecord[] }>;
}

/** An event's deliveries: one per endpoint of its store, and one to the invoice's callback_url. */
const DELIVERIES_PER_EVENT = MAX_ENDPOINTS_PER_STORE + 1;

export function getInvoiceHistory(ctx: Context, id: string): InvoiceHistory {
  const invoice = isId('inv', id) ? ctx.repos.invoices.get(id) : null;
  if (!invoice) throw new ApiError('not_found', `no invoice ${id.slice(0, 64)}`);
  const events = ctx.repos.events.listForInvoice(id).map((event) => ({
    event,
    deliveries: ctx.repos.webhookDeliveries.list({ eventId: event.id, limit: DELIVERIES_PER_EVENT }).reverse(),
  }));
  return { invoice, events };
}

export function findInvoices(ctx: Context, lookup: InvoiceLookup): StoredInvoice[] {
  if (lookup.storeId !== undefined) getStore(ctx, lookup.storeId);
  return ctx.repos.invoices.find(lookup);
}
