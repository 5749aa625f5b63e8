import { setTimeout as sleep } from 'node:timers/promises';
import { inTransaction } from '../db/connection.ts';
import type { Context } from './context.ts';

const DAY_MS = 24 * 3600_000;

/** Events looked at per transaction (~15 ms with its commit): a till running beside the prune waits for one batch at most. */
const BATCH = 500;
/**
 * The pause between batches. A till that found the lock taken sleeps in
 * SQLite's busy handler, retrying after 1, 2, 5, 10, 15, 20, 25 ms…, and with
 * batches back to back most retries find the next batch's lock: pruning 40,000
 * events beside a till creating invoices in a loop, 117 creations got through
 * (waits up to 370 ms; past the busy timeout a write is 503
 * database_unavailable), against 1,241 with the pause.
 */
const PAUSE_MS = 50;

export interface PruneResult {
  /** Epoch ms: what is older goes. */
  before: number;
  events: number;
  deliveries: number;
  attempts: number;
  /** Old events kept: a delivery of theirs is not delivered (attempting, failed, dead letter) or was delivered since. */
  keptEvents: number;
}

/** Runs fn in a write transaction that commits, or, for a dry run, rolls back: one code path counts both. */
function inBatch<T>(ctx: Context, dryRun: boolean, fn: () => T): T {
  if (!dryRun) return inTransaction(ctx.db, fn);
  ctx.db.exec('BEGIN IMMEDIATE');
  try {
    return fn();
  } finally {
    ctx.db.exec('ROLLBACK');
  }
}

/**
 * Deletes the webhook history older than `olderThanDays`: events whose every
 * delivery succeeded before then (or that had none), with those deliveries and
 * their attempts. Invoices and payments are kept, and so is every event with a
 * delivery not delivered, so what `till deliveries` lists as failed or dead
 * stays until it is replayed. Walks events in the order they were written and
 * stops at the first one between the cutoff and now. Small transactions with a
 * pause between them: safe beside a running till.
 */
export async function pruneWebhookHistory(ctx: Context, olderThanDays: number, opts: { dryRun?: boolean } = {}): Promise<PruneResult> {
  const now = ctx.clock.now();
  const result: PruneResult = { before: now - olderThanDays * DAY_MS, events: 0, deliveries: 0, attempts: 0, keptEvents: 0 };
  let seq = 0;
  for (let more = true; more; ) {
    more = inBatch(ctx, opts.dryRun ?? false, () => {
      const batch = ctx.repos.events.oldestAfter(seq, BATCH);
      for (const e of batch) {
        // Past the cutoff: the rest is newer. But one dated ahead of now was written while the clock ran fast;
        // stopping there would keep everything after it until that date.
        if (e.createdAt >= result.before && e.createdAt <= now) return false;
        seq = e.seq;
        if (e.createdAt > now) continue;
        // Not yet turned into deliveries (the outbox of an older version), or not all delivered: kept.
        if (!e.dispatched || ctx.repos.webhookDeliveries.keepsEvent(e.id, result.before)) {
          result.keptEvents++;
          continue;
        }
        const removed = ctx.repos.webhookDeliveries.deleteOfEvent(e.id);
        ctx.repos.events.delete(e.seq);
        result.events++;
        result.deliveries += removed.deliveries;
        result.attempts += removed.attempts;
      }
      return batch.length === BATCH;
    });
    if (more) await sleep(PAUSE_MS);
  }
  return result;
}
