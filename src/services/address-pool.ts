import { deriveReceiveAddresses, LAST_RECEIVE_INDEX } from '../bitcoin/derive.ts';
import { parseWatchKey, type WatchKey } from '../bitcoin/extended-key.ts';
import type { PooledAddress } from '../db/address-pool.ts';
import type { XpubRecord } from '../db/xpubs.ts';
import { ApiError } from '../domain/errors.ts';
import type { Context } from './context.ts';
import { getOrInsert } from '../get-or-insert.ts';
import { setBounded } from '../set-bounded.ts';

// Elliptic-curve derivation is the slowest step of invoice creation, so each
// active xpub keeps a pool of addresses derived ahead of its next index.
// Creation moves the next index in its own transaction and takes the pooled
// row (read a window at a time, below); only when the pool has run dry does it
// derive in line. Used rows (below the next index) are deleted later in bulk
// by the refill loop: deleting each in its creation was one more page write
// per invoice.

const parsed = new Map<string, WatchKey>();

function watchKeyOf(ctx: Context, xpub: Pick<XpubRecord, 'id' | 'keyText'>): WatchKey {
  let key = parsed.get(xpub.id);
  if (!key) {
    key = parseWatchKey(xpub.keyText, ctx.config.network, { requireNetworkMatch: false });
    parsed.set(xpub.id, key);
  }
  return key;
}

export function deriveAddresses(ctx: Context, xpub: Pick<XpubRecord, 'id' | 'keyText'>, from: number, count: number): PooledAddress[] {
  return deriveReceiveAddresses(watchKeyOf(ctx, xpub), ctx.config.network, from, count);
}

/** The address of an index handed out (XpubsRepo.takeActiveIndex), from the pool or derived; past the last receive index, refused. */
export function addressAt(ctx: Context, xpub: Pick<XpubRecord, 'id' | 'keyText'>, index: number): PooledAddress {
  if (index > LAST_RECEIVE_INDEX) {
    throw new ApiError('gap_limit_exceeded', `xpub ${xpub.id} has handed out every receive address it has (indexes 0 to ${LAST_RECEIVE_INDEX}): add a new key with till xpub add`);
  }
  return pooledAddress(ctx, xpub.id, index) ?? deriveAddresses(ctx, xpub, index, 1)[0]!;
}

// Creation takes an xpub's indexes one after another, so its pooled rows are
// read a window at a time rather than one a creation (~4 % of the loop under
// the creation load). A pooled row never changes (an index's address is
// derived from the key), so a window is never stale: it is only read again
// once creation has gone past it, or past the rows the pool held then.
const WINDOW_ROWS = 64;
const WINDOW_XPUBS = 256;
const windows = new WeakMap<Context, Map<string, PooledAddress[]>>();

function pooledAddress(ctx: Context, xpubId: string, index: number): PooledAddress | null {
  const byXpub = getOrInsert(windows, ctx, () => new Map<string, PooledAddress[]>());
  let rows = byXpub.get(xpubId);
  let row = rows && rows.length > 0 ? rows[index - rows[0]!.index] : undefined;
  if (row?.index === index) return row;
  rows = ctx.repos.addressPool.from(xpubId, index, WINDOW_ROWS);
  setBounded(byXpub, xpubId, rows, WINDOW_XPUBS);
  row = rows[0];
  return row?.index === index ? row : null;
}

// Both steps of a refill work in small pieces, each its own write: derivation
// stalls the event loop (~0.1-0.2 ms an address), and the prune's deletes
// lengthen the group commit every request waits for. In one piece, a busy
// key's used rows of the 5 s between two refills (~75,000 at the bench's rate
// on one store) took the bench's creation p99 from 11-12 to 16-19 ms.
const REFILL_CHUNK = 20;
const PRUNE_CHUNK = 1_000;

/**
 * Tops the pool up to `target` addresses ahead of the next index. Derivation
 * runs outside any transaction, in chunks that yield to the event loop, so
 * requests keep flowing while it works. The rows are written through the write
 * queue: they share the next group commit instead of paying an fsync of their
 * own, and another process's lock is waited for without stopping the loop.
 */
export async function refillAddressPool(ctx: Context, xpubId: string, target = ctx.config.addressPoolSize, stopping = () => false): Promise<number> {
  await pruneUsedAddresses(ctx, xpubId, stopping);
  let added = 0;
  while (!stopping()) {
    const xpub = ctx.repos.xpubs.get(xpubId);
    if (!xpub || xpub.status !== 'active') return added;
    const highest = ctx.repos.addressPool.highestIndex(xpub.id);
    const from = Math.max(xpub.nextIndex, (highest ?? -1) + 1);
    const missing = Math.min(xpub.nextIndex + target, LAST_RECEIVE_INDEX + 1) - from;
    if (missing <= 0) return added;
    const rows = deriveAddresses(ctx, xpub, from, Math.min(missing, REFILL_CHUNK));
    await ctx.writes.run(() => {
      // Creation may have used some of these indexes while we derived.
      const next = ctx.repos.xpubs.get(xpub.id)?.nextIndex ?? Infinity;
      ctx.repos.addressPool.insertMany(xpub.id, rows.filter((r) => r.index >= next));
    });
    added += rows.length;
  }
  return added;
}

/** Deletes the pooled rows creation has handed out (below the xpub's next index), PRUNE_CHUNK indexes a write. */
export async function pruneUsedAddresses(ctx: Context, xpubId: string, stopping = () => false): Promise<void> {
  while (!stopping()) {
    const lowest = ctx.repos.addressPool.lowestIndex(xpubId);
    const xpub = ctx.repos.xpubs.get(xpubId);
    if (lowest === null || !xpub || lowest >= xpub.nextIndex) return;
    const below = lowest + PRUNE_CHUNK;
    await ctx.writes.run(() => ctx.repos.addressPool.deleteBelow(xpubId, Math.min(below, ctx.repos.xpubs.get(xpubId)?.nextIndex ?? xpub.nextIndex)));
  }
}
