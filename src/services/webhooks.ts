import { payments } from 'bitcoinjs-lib';
import type { SecretBox } from '../auth/secret-box.ts';
import { getNetwork } from '../bitcoin/networks.ts';
import { toIso } from '../clock.ts';
import { inTransaction } from '../db/connection.ts';
import type { EndpointRecord, SealedSecrets, SecretInUse } from '../db/webhook-endpoints.ts';
import { SET_ASIDE, type DeliveryFilter, type DeliveryRecord, type DeliveryStatus } from '../db/webhook-deliveries.ts';
import { ApiError, invalidField, unknownName } from '../domain/errors.ts';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../domain/event-types.ts';
import type { Invoice } from '../domain/invoice.ts';
import { invoiceView } from '../domain/invoice-view.ts';
import { parseReceiverUrl } from '../domain/receiver-url.ts';
import { newId } from '../ids.ts';
import { plainlyPrivateHost } from '../webhooks/address-policy.ts';
import { rotateWebhookSecret, sealNewSecret } from '../webhooks/secrets.ts';
import type { Context } from './context.ts';
import { getStore } from './stores.ts';

export const MAX_ENDPOINTS_PER_STORE = 16;
export const DESCRIPTION_MAX = 255;

export interface EndpointInput {
  url?: unknown;
  description?: unknown;
  enabled_events?: unknown;
  enabled?: unknown;
}

function parseEvents(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) throw invalidField('enabled_events', 'enabled_events must be ["*"] or a non-empty list of event types');
  const allowed = new Set<string>(['*', ...EVENT_TYPES]);
  for (const t of v) {
    if (typeof t !== 'string' || !allowed.has(t)) throw invalidField('enabled_events', `unknown event type ${JSON.stringify(t)?.slice(0, 64)}; known: ${EVENT_TYPES.join(', ')}`);
  }
  const types = [...new Set(v as string[])];
  // "*" is every type already: beside others it would be kept as sent and read as a list.
  if (types.includes('*') && types.length > 1) throw invalidField('enabled_events', 'enabled_events must be ["*"] or a non-empty list of event types, not both');
  return types;
}

function parseDescription(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string' || v.length > DESCRIPTION_MAX) throw invalidField('description', `description must be a string of at most ${DESCRIPTION_MAX} characters`);
  return v;
}

function rejectUnknown(input: object, known: string[]): void {
  const unknown = Object.keys(input).find((k) => !known.includes(k));
  if (unknown) throw unknownName('field', unknown);
}

/** A new endpoint; its secret is returned in clear this once. */
export function createEndpoint(ctx: Context, storeId: string, input: EndpointInput): { endpoint: EndpointRecord; secret: string } {
  rejectUnknown(input, ['url', 'description', 'enabled_events']);
  const url = receiverUrl(ctx, input.url);
  const description = parseDescription(input.description);
  const enabledEvents = input.enabled_events === undefined ? ['*'] : parseEvents(input.enabled_events);
  return inTransaction(ctx.db, () => {
    getStore(ctx, storeId);
    if (ctx.repos.webhookEndpoints.listForStore(storeId).length >= MAX_ENDPOINTS_PER_STORE) {
      throw invalidField('url', `a store can have at most ${MAX_ENDPOINTS_PER_STORE} webhook endpoints`);
    }
    const { secret, sealed } = sealNewSecret(ctx.secrets);
    const endpoint: EndpointRecord = {
      id: newId('we', ctx.clock.now()),
      storeId,
      url,
      description,
      enabledEvents,
      enabled: true,
      secrets: sealed,
      createdAt: ctx.clock.now(),
      deletedAt: null,
    };
    ctx.repos.webhookEndpoints.insert(endpoint);
    return { endpoint, secret };
  });
}

export function listEndpoints(ctx: Context, storeId: string): EndpointRecord[] {
  getStore(ctx, storeId);
  return ctx.repos.webhookEndpoints.listForStore(storeId);
}

export function getEndpoint(ctx: Context, storeId: string, id: string): EndpointRecord {
  const e = ctx.repos.webhookEndpoints.get(id);
  if (!e || e.storeId !== storeId) throw new ApiError('not_found', `no webhook endpoint ${id.slice(0, 64)}`);
  if (e.deletedAt !== null) throw new ApiError('gone', `webhook endpoint ${id} was deleted at ${toIso(e.deletedAt)}; create a new one`);
  return e;
}

export function updateEndpoint(ctx: Context, storeId: string, id: string, input: EndpointInput): EndpointRecord {
  rejectUnknown(input, ['url', 'description', 'enabled_events', 'enabled']);
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean') throw invalidField('enabled', 'enabled must be true or false');
  return inTransaction(ctx.db, () => {
    const e = getEndpoint(ctx, storeId, id);
    const next: EndpointRecord = {
      ...e,
      url: input.url === undefined ? e.url : receiverUrl(ctx, input.url),
      description: input.description === undefined ? e.description : parseDescription(input.description),
      enabledEvents: input.enabled_events === undefined ? e.enabledEvents : parseEvents(input.enabled_events),
      enabled: input.enabled === undefined ? e.enabled : (input.enabled as boolean),
    };
    ctx.repos.webhookEndpoints.update(next);
    // "Fix the URL, then replay" (docs/WEBHOOKS.md): what is still to deliver follows the endpoint.
    if (next.url !== e.url) ctx.repos.webhookDeliveries.readdress(next, next.url);
    // Set aside at once, to replay once it is enabled again (failed is a receiver's 4xx, spec 3.2).
    if (e.enabled && !next.enabled) ctx.repos.webhookDeliveries.setAside(e.id, ctx.clock.now(), SET_ASIDE.disabled);
    return next;
  });
}

/** An endpoint's url, as given: well formed, and one Till may deliver to. */
function receiverUrl(ctx: Context, value: unknown): string {
  const url = parseReceiverUrl('url', value);
  refusePrivateReceiver(ctx, 'url', url);
  return url;
}

/** Refuses a receiver Till would never deliver to (a private address) unless the operator allows private ones. */
export function refusePrivateReceiver(ctx: Context, field: string, url: string): void {
  const host = ctx.config.allowPrivateCallbacks ? null : plainlyPrivateHost(url);
  if (host) {
    throw invalidField(field, `${field} points at ${host}, a private address, where Till does not deliver unless webhooks.allow_private is set (TILL_ALLOW_PRIVATE_CALLBACKS=true)`);
  }
}

export function deleteEndpoint(ctx: Context, storeId: string, id: string): EndpointRecord {
  return inTransaction(ctx.db, () => {
    const e = { ...getEndpoint(ctx, storeId, id), deletedAt: ctx.clock.now() };
    ctx.repos.webhookEndpoints.update(e);
    ctx.repos.webhookDeliveries.setAside(e.id, e.deletedAt, SET_ASIDE.deleted);
    return e;
  });
}

/** The previous secret stays valid 24 h (spec 6.3.5), so receivers can switch without dropping events. */
function rotated(ctx: Context, current: SealedSecrets): { sealed: SealedSecrets; secret: string } {
  // Kept sealed as it is; one this data dir cannot open (restored without secret.key) is not kept at all.
  const next = rotateWebhookSecret(canOpen(ctx.secrets, current.secret) ? current.secret : null, ctx.clock.now());
  return { secret: next.secret, sealed: { secret: ctx.secrets.seal(next.secret), previous: next.previousSecret, previousExpiresAt: next.previousSecretExpiresAt } };
}

function canOpen(secrets: SecretBox, sealed: string): boolean {
  try {
    secrets.open(sealed);
    return true;
  } catch {
    return false;
  }
}

export function rotateEndpointSecret(ctx: Context, storeId: string, id: string): { endpoint: EndpointRecord; secret: string } {
  return inTransaction(ctx.db, () => {
    const e = getEndpoint(ctx, storeId, id);
    const { sealed, secret } = rotated(ctx, e.secrets);
    const next = { ...e, secrets: sealed };
    ctx.repos.webhookEndpoints.update(next);
    return { endpoint: next, secret };
  });
}

export function rotateCallbackSecret(ctx: Context, storeId: string): { secret: string; previousExpiresAt: number | null } {
  return inTransaction(ctx.db, () => {
    getStore(ctx, storeId);
    const current = ctx.repos.webhookEndpoints.getCallbackSecrets(storeId);
    const sealed = current ? rotated(ctx, current) : sealNewSecret(ctx.secrets);
    ctx.repos.webhookEndpoints.setCallbackSecrets(storeId, sealed.sealed);
    return { secret: sealed.secret, previousExpiresAt: sealed.sealed.previousExpiresAt };
  });
}

/** Secrets in use that this data dir's secret.key cannot open: every delivery signed with one fails. Also given a backup's database. */
export function listUnreadableSecrets(ctx: { secrets: SecretBox; repos: Pick<Context['repos'], 'webhookEndpoints'> }): SecretInUse[] {
  return ctx.repos.webhookEndpoints.listSecretsInUse().filter((s) => !canOpen(ctx.secrets, s.sealed));
}

/** A secret replaced by rotateUnreadableSecrets, in clear this once. */
export interface ReplacedSecret {
  storeId: string;
  /** null: the store's callback secret. */
  endpointId: string | null;
  url: string | null;
  secret: string;
}

/**
 * A new secret for every one in use that this data dir's secret.key cannot
 * open (a data dir restored without its key, or beside another till's). None
 * is kept as the previous: nothing could sign with it. Those that open stay.
 */
export function rotateUnreadableSecrets(ctx: Context): ReplacedSecret[] {
  return inTransaction(ctx.db, () =>
    listUnreadableSecrets(ctx).map(({ storeId, endpointId, url }) => {
      const { secret, sealed } = sealNewSecret(ctx.secrets);
      if (endpointId === null) ctx.repos.webhookEndpoints.setCallbackSecrets(storeId, sealed);
      else ctx.repos.webhookEndpoints.update({ ...getEndpoint(ctx, storeId, endpointId), secrets: sealed });
      return { storeId, endpointId, url, secret };
    }));
}

/**
 * The synthetic invoice's address pays a script of OP_RETURN alone by its hash
 * (P2WSH): an output type Till never hands out (P2WPKH, P2TR), so no invoice of
 * any xpub shares it (BIP84's test-vector address did: the demo store's first
 * invoice), and nothing sent there by mistake can be spent by anyone.
 */
const SYNTHETIC_WITNESS_SCRIPT = Buffer.from([0x6a]);

/**
 * A synthetic invoice for webhook.test: plainly marked, never stored as an
 * invoice, pending (a handler that reads the status rather than the event
 * type must not fulfil anything), its address one of the till's network.
 */
function syntheticInvoice(ctx: Context, storeId: string, livemode: boolean, now: number): Invoice {
  return {
    id: newId('inv', now),
    storeId,
    livemode,
    status: 'pending',
    amountSats: 10_000,
    fiat: null,
    address: payments.p2wsh({ redeem: { output: SYNTHETIC_WITNESS_SCRIPT }, network: getNetwork(ctx.config.network) }).address!,
    confirmationsRequired: 1,
    lateWindowMs: 0,
    expiresAt: now + 30 * 60_000,
    createdAt: now,
    paidAt: null,
    cancelledAt: null,
    expiredAt: null,
    metadata: { synthetic: 'true' },
    callbackUrl: null,
    payments: [],
  };
}

/** Queues a webhook.test delivery to one endpoint; returns its id. The worker sends it. */
export function queueTestDelivery(ctx: Context, storeId: string, endpointId: string): string {
  return inTransaction(ctx.db, () => {
    const store = getStore(ctx, storeId);
    const e = getEndpoint(ctx, storeId, endpointId);
    // Nothing is sent to a disabled endpoint: a test delivery would only be set aside.
    if (!e.enabled) throw invalidField('wid', `webhook endpoint ${e.id} is disabled; enable it to test it`);
    const now = ctx.clock.now();
    const eventId = newId('evt', now);
    const invoice = syntheticInvoice(ctx, store.id, store.mode === 'live', now);
    const body = JSON.stringify({
      event_id: eventId,
      event_type: WEBHOOK_TEST_EVENT_TYPE,
      created_at: toIso(now),
      livemode: invoice.livemode,
      data: { invoice: invoiceView(invoice, ctx.baseUrl) },
    });
    ctx.repos.events.insertDispatched({ id: eventId, type: WEBHOOK_TEST_EVENT_TYPE, storeId, invoiceId: null, livemode: invoice.livemode, createdAt: now, body });
    const id = newId('dlv', now);
    ctx.repos.webhookDeliveries.insert({ id, eventId, storeId, endpointId: e.id, target: e.id, url: e.url, nextAttemptAt: now, createdAt: now });
    return id;
  });
}

/** Deliveries, newest first; a store id that names no store is refused (a typo must not read as "none"). */
export function listDeliveries(ctx: Context, filter: DeliveryFilter): DeliveryRecord[] {
  if (filter.storeId !== undefined) getStore(ctx, filter.storeId);
  return ctx.repos.webhookDeliveries.list(filter);
}

export function getDelivery(ctx: Context, id: string): DeliveryRecord {
  const d = ctx.repos.webhookDeliveries.get(id);
  if (!d) throw new ApiError('not_found', `no delivery ${id.slice(0, 64)}`);
  return d;
}

export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['attempting', 'success', 'failed', 'dead_letter'];

/** Why a delivery's endpoint takes no replay (disabled or deleted), or null: a callback_url always does. */
function replayRefusal(ctx: Context, d: DeliveryRecord): ApiError | null {
  if (d.endpointId === null) return null;
  const e = ctx.repos.webhookEndpoints.get(d.endpointId);
  if (!e || e.deletedAt !== null) return new ApiError('gone', `delivery ${d.id} was to webhook endpoint ${d.endpointId}, which was deleted; it cannot be replayed`);
  if (!e.enabled) return invalidField('id', `delivery ${d.id} is to webhook endpoint ${e.id}, which is disabled: enable it (till webhooks enable --store ${e.storeId} ${e.id}), then replay`);
  return null;
}

/** Starts a fresh cycle of 7 attempts for a dead-lettered (or failed) delivery: same event, same body. */
export function replayDelivery(ctx: Context, id: string): DeliveryRecord {
  return inTransaction(ctx.db, () => {
    const d = getDelivery(ctx, id);
    const refusal = replayRefusal(ctx, d);
    if (refusal) throw refusal;
    if (!ctx.repos.webhookDeliveries.replay(id, ctx.clock.now())) {
      throw invalidField('id', `delivery ${id} is ${d.status}; only dead_letter and failed deliveries can be replayed`);
    }
    return ctx.repos.webhookDeliveries.get(id)!;
  });
}

/** Replays every dead letter (of a store) but those whose endpoint is disabled or deleted, which are counted in `left`. */
export function replayAllDead(ctx: Context, storeId?: string): { replayed: DeliveryRecord[]; left: number } {
  return inTransaction(ctx.db, () => {
    if (storeId !== undefined) getStore(ctx, storeId);
    const all = ctx.repos.webhookDeliveries.list({ storeId, status: 'dead_letter', limit: 1_000_000 });
    const dead = all.filter((d) => !replayRefusal(ctx, d));
    for (const d of dead) ctx.repos.webhookDeliveries.replay(d.id, ctx.clock.now());
    return { replayed: dead.map((d) => ctx.repos.webhookDeliveries.get(d.id)!), left: all.length - dead.length };
  });
}
