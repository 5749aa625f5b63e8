import { ApiError, invalidField } from '../domain/errors.ts';
import { STORE_LIMITS, STORE_MODES, type Store, type StoreSettings } from '../domain/store.ts';
import { newId } from '../ids.ts';
import { sealNewSecret } from '../webhooks/secrets.ts';
import { forgetCallers } from './api-keys.ts';
import { inTransaction } from '../db/connection.ts';
import type { Context } from './context.ts';

function checkInteger(param: string, value: number, { min, max }: { min: number; max: number }): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) throw invalidField(param, `${param} must be an integer from ${min} to ${max}`);
}

/** Checks every field of a settings change; throws validation_error naming the first bad one. */
export function validateStoreSettings(s: StoreSettings): void {
  if (s.name !== undefined) {
    const name = s.name.trim();
    if (name.length === 0 || name.length > STORE_LIMITS.nameMaxLength || /[\u0000-\u001f\u007f]/.test(name)) {
      throw invalidField('name', `name must be 1 to ${STORE_LIMITS.nameMaxLength} printable characters`);
    }
  }
  if (s.mode !== undefined && !STORE_MODES.includes(s.mode)) throw invalidField('mode', 'mode must be live or test');
  if (s.confirmationsRequired !== undefined) checkInteger('confirmations', s.confirmationsRequired, STORE_LIMITS.confirmations);
  if (s.expiryMinutes !== undefined) checkInteger('expiry_minutes', s.expiryMinutes, STORE_LIMITS.expiryMinutes);
  if (s.lateWindowMinutes !== undefined) checkInteger('late_window_minutes', s.lateWindowMinutes, STORE_LIMITS.lateWindowMinutes);
  if (s.logoUrl != null) {
    let ok = s.logoUrl.length <= STORE_LIMITS.urlMaxLength;
    try {
      ok &&= ['https:', 'http:'].includes(new URL(s.logoUrl).protocol);
    } catch {
      ok = false;
    }
    if (!ok) throw invalidField('logo_url', 'logo_url must be an http(s) URL');
  }
  if (s.brandColor != null && !/^#[0-9a-fA-F]{6}$/.test(s.brandColor)) throw invalidField('brand_color', 'brand_color must look like #1a2b3c');
}

/**
 * Creates a store with its callback secret (signing deliveries to invoices'
 * callback_url). The secret is returned in clear this once; it is stored sealed.
 */
export function createStore(ctx: Context, settings: StoreSettings & { name: string; mode: Store['mode'] }): { store: Store; callbackSecret: string } {
  validateStoreSettings(settings);
  const store: Store = {
    id: newId('sto', ctx.clock.now()),
    name: settings.name.trim(),
    mode: settings.mode,
    confirmationsRequired: settings.confirmationsRequired ?? 1,
    expiryMinutes: settings.expiryMinutes ?? 30,
    lateWindowMinutes: settings.lateWindowMinutes ?? 7 * 24 * 60,
    logoUrl: settings.logoUrl ?? null,
    brandColor: settings.brandColor ?? null,
    createdAt: ctx.clock.now(),
    archivedAt: null,
  };
  const callbackSecret = inTransaction(ctx.db, () => {
    ctx.repos.stores.insert(store);
    const { secret, sealed } = sealNewSecret(ctx.secrets);
    ctx.repos.webhookEndpoints.setCallbackSecrets(store.id, sealed);
    return secret;
  });
  return { store, callbackSecret };
}

export function getStore(ctx: Context, id: string): Store {
  const store = ctx.repos.stores.get(id);
  if (!store) throw new ApiError('not_found', `no store ${id}`);
  return store;
}

/** A store that takes new keys and xpubs: an archived one is refused, by name (admin commands only: the API says "no store"). */
export function getOpenStore(ctx: Context, id: string): Store {
  const store = getStore(ctx, id);
  if (store.archivedAt !== null) throw new ApiError('not_found', `store ${store.id} is archived`);
  return store;
}

export function listStores(ctx: Context): Store[] {
  return ctx.repos.stores.list();
}

export function updateStore(ctx: Context, id: string, settings: StoreSettings): Store {
  validateStoreSettings(settings);
  return inTransaction(ctx.db, () => {
    const store = getStore(ctx, id);
    const defined = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
    const next: Store = { ...store, ...defined, name: (settings.name ?? store.name).trim() };
    ctx.repos.stores.update(next);
    forgetCallers(ctx);
    return next;
  });
}

export function archiveStore(ctx: Context, id: string): Store {
  return inTransaction(ctx.db, () => {
    const store = getStore(ctx, id);
    if (store.archivedAt !== null) return store;
    const next = { ...store, archivedAt: ctx.clock.now() };
    ctx.repos.stores.update(next);
    forgetCallers(ctx);
    return next;
  });
}
