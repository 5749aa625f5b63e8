import { ApiError } from '../domain/errors.ts';
import type { Env, Store } from '../domain/store.ts';
import { generateApiKey, hashApiKey, hashApiKeyHex, hashesEqual, isWellFormedApiKey, readBearer } from '../auth/api-keys.ts';
import type { ApiKeyRecord } from '../db/api-keys.ts';
import { inTransaction } from '../db/connection.ts';
import { newId } from '../ids.ts';
import type { Context } from './context.ts';
import { getOpenStore, getStore } from './stores.ts';

export function mintApiKey(ctx: Context, storeId: string, env: Env): { record: ApiKeyRecord; key: string } {
  const key = generateApiKey(env);
  const record: ApiKeyRecord = {
    id: newId('key', ctx.clock.now()),
    storeId,
    env,
    secretHash: hashApiKey(key),
    last4: key.slice(-4),
    createdAt: ctx.clock.now(),
    revokedAt: null,
  };
  inTransaction(ctx.db, () => {
    getOpenStore(ctx, storeId);
    ctx.repos.apiKeys.insert(record);
  });
  return { record, key };
}

/** A store id that names no store is refused (a typo must not read as "none"). */
export function listApiKeys(ctx: Context, storeId?: string): ApiKeyRecord[] {
  if (storeId !== undefined) getStore(ctx, storeId);
  return ctx.repos.apiKeys.list(storeId);
}

export function revokeApiKey(ctx: Context, id: string): ApiKeyRecord {
  return inTransaction(ctx.db, () => {
    const rec = ctx.repos.apiKeys.get(id);
    if (!rec) throw new ApiError('not_found', `no API key ${id}`);
    ctx.repos.apiKeys.revoke(id, ctx.clock.now());
    forgetCallers(ctx);
    return ctx.repos.apiKeys.get(id)!;
  });
}

export interface Caller {
  apiKey: ApiKeyRecord;
  store: Store;
}

// Every API call looks its key and store up; both change rarely. They are
// cached per context and the cache is dropped whenever this process changes a
// key or store (forgetCallers) or another connection (the CLI) did: when
// PRAGMA data_version moved, the count of key and store changes (migration
// 0014) says whether the commit was one of those, so the db thread's webhook
// outcomes leave the cache be. A revocation applies to the next request.
const AUTH_CHANGES = 'auth_changes';
const callerCache = new WeakMap<Context, { dataVersion: number; authChanges: string | null; byHash: Map<string, { rec: ApiKeyRecord; store: Store | null }> }>();

function cachedCallers(ctx: Context): Map<string, { rec: ApiKeyRecord; store: Store | null }> {
  const dataVersion = ctx.repos.meta.dataVersion();
  let cache = callerCache.get(ctx);
  // Read once when data_version moved, and kept for the new cache if the count moved too.
  let authChanges: string | null | undefined;
  if (cache && cache.dataVersion !== dataVersion) {
    // No count (its row deleted by hand): every other connection's commit drops the cache, as before the count.
    authChanges = ctx.repos.meta.get(AUTH_CHANGES);
    if (authChanges !== null && authChanges === cache.authChanges) cache.dataVersion = dataVersion;
    else cache = undefined;
  }
  if (!cache || cache.byHash.size > 10_000) {
    cache = { dataVersion, authChanges: authChanges === undefined ? ctx.repos.meta.get(AUTH_CHANGES) : authChanges, byHash: new Map() };
    callerCache.set(ctx, cache);
  }
  return cache.byHash;
}

/** Called by every change to a key or store made in this process. */
export function forgetCallers(ctx: Context): void {
  callerCache.delete(ctx);
}

/** Resolves an Authorization header to its key and store, with the spec's 401/404 codes (spec 5). */
export function authenticateApiKey(ctx: Context, authorization: string | null | undefined): Caller {
  const key = readBearer(authorization);
  if (!key) {
    // A key has no comma: one here is the header given twice (joined) or more than one credential.
    const why = authorization?.includes(',') ? 'the Authorization header must be given once, with one API key' : 'Authorization: Bearer <API key> is required';
    throw new ApiError('api_key_invalid', why);
  }
  if (!isWellFormedApiKey(key)) throw new ApiError('api_key_invalid', 'the API key is malformed');
  const hex = hashApiKeyHex(key);
  const cache = cachedCallers(ctx);
  let found = cache.get(hex);
  if (!found) {
    const hash = Buffer.from(hex, 'hex');
    const rec = ctx.repos.apiKeys.findByHash(hash);
    if (!rec || !hashesEqual(rec.secretHash, hash)) throw new ApiError('api_key_invalid', 'the API key is not known');
    found = { rec, store: ctx.repos.stores.get(rec.storeId) };
    cache.set(hex, found);
  }
  const { rec, store } = found;
  if (rec.revokedAt !== null) throw new ApiError('api_key_revoked', 'the API key was revoked');
  if (!store || store.archivedAt !== null) throw new ApiError('not_found', 'the store of this API key was archived');
  if (store.mode !== rec.env) {
    throw new ApiError('api_key_wrong_env', `a ${rec.env} key cannot be used on a store in ${store.mode} mode`);
  }
  return { apiKey: rec, store };
}
