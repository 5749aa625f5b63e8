import { newId } from '../ids.ts';
import type { Context } from '../services/context.ts';

/** The fairness key of a receiver: an endpoint, or a callback URL's origin. */
export function callbackTarget(url: string): string {
  return `callback:${new URL(url).origin}`;
}

function subscribes(enabledEvents: string[], type: string): boolean {
  return enabledEvents.includes('*') || enabledEvents.includes(type);
}

/**
 * Turns outbox events into deliveries: one for the invoice's callback_url and
 * one per enabled store endpoint subscribed to the type. Run it inside a
 * transaction (the worker queues it on ctx.writes, so it shares the commit of
 * the writes around it): deliveries and the dispatched mark land together, and
 * (event, target) is unique, so a crash neither loses nor doubles a delivery.
 */
export function dispatchEvents(ctx: Context, limit = 500): number {
  const events = ctx.repos.events.listUndispatched(limit);
  const endpointsByStore = new Map<string, ReturnType<typeof ctx.repos.webhookEndpoints.listForStore>>();
  const now = ctx.clock.now();
  for (const e of events) {
    let endpoints = endpointsByStore.get(e.storeId);
    if (!endpoints) endpointsByStore.set(e.storeId, (endpoints = ctx.repos.webhookEndpoints.listForStore(e.storeId)));
    const add = (endpointId: string | null, target: string, url: string) =>
      ctx.repos.webhookDeliveries.insert({ id: newId('dlv', now), eventId: e.id, storeId: e.storeId, endpointId, target, url, nextAttemptAt: now, createdAt: now });
    if (e.callbackUrl) add(null, callbackTarget(e.callbackUrl), e.callbackUrl);
    for (const ep of endpoints) if (ep.enabled && subscribes(ep.enabledEvents, e.type)) add(ep.id, ep.id, ep.url);
    ctx.repos.events.markDispatched(e.seq);
  }
  return events.length;
}
