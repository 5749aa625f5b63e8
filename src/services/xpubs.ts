import { LAST_RECEIVE_INDEX } from '../bitcoin/derive.ts';
import { parseWatchKey } from '../bitcoin/extended-key.ts';
import { inTransaction } from '../db/connection.ts';
import type { XpubRecord } from '../db/xpubs.ts';
import { ApiError, invalidField } from '../domain/errors.ts';
import type { Env } from '../domain/store.ts';
import { newId } from '../ids.ts';
import { deriveAddresses } from './address-pool.ts';
import type { Context } from './context.ts';
import { forgetKeyToSkip } from './restored-backup.ts';
import { getOpenStore, getStore } from './stores.ts';

export const GAP_LIMIT = { default: 20, min: 6, max: 100_000 } as const;

export interface AddXpubInput {
  storeId: string;
  env: Env;
  key: string;
  gapLimit?: number;
}

/**
 * Registers a watch-only key as the store's active key for env, retiring the
 * one it replaces (whose issued addresses stay watched through their
 * invoices). Returns the first receive addresses for the merchant to compare
 * with their wallet.
 */
export function addXpub(ctx: Context, input: AddXpubInput): { xpub: XpubRecord; retired: XpubRecord | null; alreadyActive: boolean; firstAddresses: string[] } {
  const gapLimit = input.gapLimit ?? GAP_LIMIT.default;
  if (!Number.isSafeInteger(gapLimit) || gapLimit < GAP_LIMIT.min || gapLimit > GAP_LIMIT.max) {
    throw invalidField('gap_limit', `gap limit must be an integer from ${GAP_LIMIT.min} to ${GAP_LIMIT.max}`);
  }
  const store = getOpenStore(ctx, input.storeId);
  // Live invoices must pay into the configured network; a test store may use
  // any key, its invoices are driven by simulate.
  const key = parseWatchKey(input.key.trim(), ctx.config.network, { requireNetworkMatch: input.env === 'live' });
  const now = ctx.clock.now();
  const result = inTransaction(ctx.db, () => {
    // The same key in another form (bare or descriptor, with or without origin) derives the same addresses.
    const known = ctx.repos.xpubs.list().filter((x) => parseWatchKey(x.keyText, ctx.config.network, { requireNetworkMatch: false }).identity === key.identity);
    const elsewhere = known.find((x) => x.storeId !== store.id || x.env !== input.env);
    if (elsewhere) {
      throw invalidField('xpub', `this key is already registered for store ${elsewhere.storeId} (${elsewhere.env}); one key serves one store and environment, or addresses would be shared`);
    }
    const current = ctx.repos.xpubs.findActive(store.id, input.env);
    const same = known.find((x) => x.id === current?.id) ?? known[0];
    let retired: XpubRecord | null = null;
    if (current && current.id !== same?.id) {
      ctx.repos.xpubs.retire(current.id, now);
      retired = ctx.repos.xpubs.get(current.id);
    }
    let id: string;
    if (same) {
      // Re-adding a retired key resumes at its next index: no address is reused; it keeps its gap limit unless given one.
      ctx.repos.xpubs.reactivate(same.id, input.gapLimit ?? same.gapLimit);
      catchUpWithTwins(ctx, same, known);
      id = same.id;
    } else {
      id = newId('xpb', now);
      ctx.repos.xpubs.insert({ id, storeId: store.id, env: input.env, keyText: key.normalized, scriptType: key.scriptType, keyNetwork: key.keyNetwork, gapLimit, createdAt: now });
    }
    return { xpub: ctx.repos.xpubs.get(id)!, retired, alreadyActive: same !== undefined && current?.id === same.id };
  });
  const firstAddresses = deriveAddresses(ctx, result.xpub, 0, 3).map((a) => a.address);
  return { ...result, firstAddresses };
}

/** Moves a key's next index past every index its twins (rows of the same key) handed out. */
function catchUpWithTwins(ctx: Context, key: XpubRecord, twins: XpubRecord[]): void {
  const ahead = Math.max(...twins.map((x) => x.nextIndex)) - key.nextIndex;
  if (ahead > 0) ctx.repos.xpubs.skipIndexes(key.id, ahead);
}

export interface SharedKeyRepair {
  /** The key's rows, oldest first. */
  xpubIds: string[];
  /** The row left active, and those retired. */
  kept: string;
  retired: string[];
  /** The kept row's next index now (the highest of the rows'). */
  nextIndex: number;
}

/**
 * Before a key was known by what its addresses derive from (3402cca, 25
 * November), one key pasted in two forms became two rows, each counting its
 * own indexes from 0: they hand out the same addresses. Nothing else stops
 * that since the unique address index went (migration 0013), so each start
 * repairs such rows: the oldest active one stays (a younger one's invoices
 * failed on the shared address before), the others are retired, and the one
 * left active moves past every index the rows handed out (a retired one does
 * when it is added again: addXpub). Returns what it changed.
 */
export function repairSharedKeys(ctx: Context): SharedKeyRepair[] {
  const unsafe = () => {
    const byIdentity = new Map<string, XpubRecord[]>();
    for (const x of ctx.repos.xpubs.list()) {
      let identity: string;
      try {
        identity = parseWatchKey(x.keyText, ctx.config.network, { requireNetworkMatch: false }).identity;
      } catch {
        continue; // not a key this Till reads: it hands out nothing either
      }
      byIdentity.set(identity, [...(byIdentity.get(identity) ?? []), x]);
    }
    return [...byIdentity.values()].filter((rows) => {
      const active = rows.filter((x) => x.status === 'active');
      return active.length > 1 || (active.length === 1 && active[0]!.nextIndex < Math.max(...rows.map((x) => x.nextIndex)));
    });
  };
  if (unsafe().length === 0) return [];
  return inTransaction(ctx.db, () =>
    unsafe().map((rows) => {
      rows.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
      const keep = rows.find((x) => x.status === 'active')!;
      const retired = rows.filter((x) => x.status === 'active' && x !== keep).map((x) => x.id);
      for (const id of retired) ctx.repos.xpubs.retire(id, ctx.clock.now());
      catchUpWithTwins(ctx, keep, rows);
      return { xpubIds: rows.map((x) => x.id), kept: keep.id, retired, nextIndex: ctx.repos.xpubs.get(keep.id)!.nextIndex };
    }),
  );
}

/** A store id that names no store is refused (a typo must not read as "none"). */
export function listXpubs(ctx: Context, storeId?: string): XpubRecord[] {
  if (storeId !== undefined) getStore(ctx, storeId);
  return ctx.repos.xpubs.list(storeId);
}

/** The most indexes one `till xpub skip` moves past. */
export const SKIP_MAX = 1_000_000;

/**
 * Moves a key's next receive index `count` further on: after restoring a
 * backup older than the last invoice, its later invoices' addresses (which
 * may be paid) are not handed out again. Pooled addresses below it go.
 */
export function skipIndexes(ctx: Context, id: string, count: number): XpubRecord {
  if (!Number.isSafeInteger(count) || count < 1 || count > SKIP_MAX) throw invalidField('count', `count must be an integer from 1 to ${SKIP_MAX}`);
  return inTransaction(ctx.db, () => {
    const x = ctx.repos.xpubs.get(id);
    if (!x) throw new ApiError('not_found', `no xpub ${id.slice(0, 64)}`);
    if (x.nextIndex + count > LAST_RECEIVE_INDEX + 1) throw invalidField('count', `xpub ${id} has only ${LAST_RECEIVE_INDEX + 1 - x.nextIndex} receive indexes left`);
    ctx.repos.xpubs.skipIndexes(id, count);
    ctx.repos.addressPool.deleteBelow(id, x.nextIndex + count);
    forgetKeyToSkip(ctx, id);
    return ctx.repos.xpubs.get(id)!;
  });
}

export function retireXpub(ctx: Context, id: string): XpubRecord {
  return inTransaction(ctx.db, () => {
    const x = ctx.repos.xpubs.get(id);
    if (!x) throw new ApiError('not_found', `no xpub ${id}`);
    ctx.repos.xpubs.retire(id, ctx.clock.now());
    return ctx.repos.xpubs.get(id)!;
  });
}
