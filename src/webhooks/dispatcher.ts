import type { EndpointRecord } from '../db/webhook-endpoints.ts';
import { newId } from '../ids.ts';
import type { Context } from '../services/context.ts';
import { getOrInsert } from '../get-or-insert.ts';

/** The fairness key of a receiver: an endpoint, or a callback URL's origin. */
export function callbackTarget(url: string): string {
  return `callback:${new URL(url).origin}`;
}

function subscribes(enabledEvents: string[], type: string): boolean {
  return enabledEvents.includes('*') || enabledEvents.includes(type);
}

/**
 * Writes an event's deliveries: one for its invoice's callback_url and one per
 * enabled endpoint of the store subscribed to its type. (event, target) is
 * unique, so running it twice for an event adds nothing.
 */
export function addDeliveries(ctx: Context, e: { id: string; type: string; storeId: string }, callbackUrl: string | null, endpoints: EndpointRecord[], now: number): void {
  const add = (endpointId: string | null, target: string, url: string) => {
    if (ctx.repos.webhookDeliveries.insert({ id: newId('dlv', now), eventId: e.id, storeId: e.storeId, endpointId, target, url, nextAttemptAt: now, createdAt: now })) ctx.newDeliveries.add(target);
  };
  if (callbackUrl) add(null, callbackTarget(callbackUrl), callbackUrl);
  for (const ep of endpoints) if (ep.enabled && subscribes(ep.enabledEvents, e.type)) add(ep.id, ep.id, ep.url);
}

/**
 * Turns outbox events that were written undispatched into deliveries. Events
 * are normally dispatched by the transaction that records them
 * (recordEvents); this catches the rest, e.g. those written by an older Till.
 * Run it inside a transaction (the worker queues it on ctx.writes): the
 * deliveries and the dispatched mark land together, so a crash neither loses
 * nor doubles a delivery.
 */
export function dispatchEvents(ctx: Context, limit = 500): number {
  const events = ctx.repos.events.listUndispatched(limit);
  const endpointsByStore = new Map<string, EndpointRecord[]>();
  const now = ctx.clock.now();
  for (const e of events) {
    const endpoints = getOrInsert(endpointsByStore, e.storeId, () => ctx.repos.webhookEndpoints.listForStore(e.storeId));
    addDeliveries(ctx, e, e.callbackUrl, endpoints, now);
    ctx.repos.events.markDispatched(e.seq);
  }
  return events.length;
}
