import type { ChainHealth } from './bitcoin/chain-watcher.ts';
import type { Clock } from './clock.ts';
import { LATEST_SCHEMA_VERSION } from './db/migrate.ts';
import { ApiError } from './domain/errors.ts';
import { gapHeadroom, gapLimitReached } from './domain/gap-limit.ts';
import type { Context } from './services/context.ts';
import { assertDiskWritable } from './services/disk.ts';
import { keysToSkipAfterRestore } from './services/restored-backup.ts';
import { VERSION } from './version.ts';

// GET /healthz (docs/API.md, Health): "ok" exactly when Till can make and
// follow every kind of invoice. Read from memory but for the disk's free
// space, the active keys and the (capped) webhook counts, so it still
// answers after a failed fdatasync.

export interface HealthReport {
  status: 'ok' | 'degraded';
  version: string;
  network: Context['config']['network'];
  schema_version: number;
  uptime_seconds: number;
  rates: { status: 'ok' | 'unavailable'; usd_per_btc: string | null; source: string | null; fetched_at: string | null };
  /**
   * `failed` once the disk failed to make a write durable (writes are refused until a restart);
   * `disk_full` while free space is under min_free_disk_mb, `unavailable` while it cannot be read (writes answer 503).
   */
  database: { status: 'ok' | 'failed' | 'disk_full' | 'unavailable'; error: string | null };
  chain: ChainHealth | { status: 'disabled' };
  /**
   * How close the live keys are to their wallets' gap limits (DESIGN.md): those where live invoices now answer
   * 409 gap_limit_exceeded, and the fewest indexes left on any (null: no live key, or the database failed).
   */
  gap_limit: { at_limit: string[]; lowest_headroom: number | null };
  /**
   * Deliveries not (yet) delivered: still attempted (due, or waiting for a retry), and those that gave up in the last
   * day, refused for good by the receiver (a 4xx: `failed`) or after every attempt (dead letters), but for those set
   * aside with their endpoint (disabled or deleted by the operator). Each counted up to UNDELIVERED_COUNT_CAP. Null
   * when the database cannot be read. They leave `status` alone: the merchant's server is not Till.
   */
  webhooks: { attempting: number | null; failed_last_day: number | null; dead_letters_last_day: number | null };
  /**
   * Running on a restored backup whose keys may hand out addresses of invoices made after it (services/restored-backup.ts):
   * when it was taken and the keys still to skip past (`till xpub skip`); null otherwise, or when the database cannot be
   * read. It leaves `status` alone, as `gap_limit` does: a proxy checking health must not take the checkout away for it.
   */
  restored_backup: { taken_at: string; keys_to_skip: string[] } | null;
}

export interface HealthInputs {
  ctx: Context;
  clock: Clock;
  startedAt: number;
  /** Null when the chain is not watched. */
  chain: { health(): ChainHealth } | null;
  /** Why the disk failed to make a write durable, if it did. */
  durabilityError: string | null;
}

export function healthReport(h: HealthInputs): HealthReport {
  const chain = h.chain?.health() ?? { status: 'disabled' as const };
  const database = databaseHealth(h);
  // ok: every kind of invoice this till makes can be made and followed (fiat aside: rates show their own status);
  // without bitcoind that is test invoices only, by configuration, not a fault.
  const chainOk = chain.status === 'disabled' || (chain.status === 'synced' && !chain.initial_block_download);
  return {
    status: chainOk && database.status === 'ok' ? 'ok' : 'degraded',
    version: VERSION,
    network: h.ctx.config.network,
    schema_version: LATEST_SCHEMA_VERSION,
    uptime_seconds: Math.floor((h.clock.now() - h.startedAt) / 1000),
    rates: rateHealth(h.ctx),
    database,
    chain,
    gap_limit: gapHealth(h, database.status === 'failed'),
    webhooks: webhookHealth(h, database.status === 'failed'),
    restored_backup: restoredBackupHealth(h, database.status === 'failed'),
  };
}

/** Enough for a monitor to alert on, and cheap whatever the backlog (`till deliveries list` shows them all). */
export const UNDELIVERED_COUNT_CAP = 10_000;
/** Deliveries that gave up are reported this long: an alert clears by itself, also when no replay can help. */
const GIVEN_UP_REPORTED_MS = 24 * 3600_000;

function webhookHealth(h: HealthInputs, dbFailed: boolean): HealthReport['webhooks'] {
  const n = readUnlessFailed(dbFailed, () => h.ctx.repos.webhookDeliveries.countUndelivered(h.clock.now() - GIVEN_UP_REPORTED_MS, UNDELIVERED_COUNT_CAP));
  return { attempting: n?.attempting ?? null, failed_last_day: n?.failed ?? null, dead_letters_last_day: n?.deadLetter ?? null };
}

/** A read of the database for the report; null once it failed, or when the read does (the database part says why, when it can tell). */
function readUnlessFailed<T>(dbFailed: boolean, read: () => T): T | null {
  if (dbFailed) return null;
  try {
    return read();
  } catch {
    return null;
  }
}

function databaseHealth(h: HealthInputs): HealthReport['database'] {
  if (h.durabilityError !== null) return { status: 'failed', error: h.durabilityError };
  try {
    assertDiskWritable(h.ctx);
    return { status: 'ok', error: null };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { status: err.code === 'disk_full' ? 'disk_full' : 'unavailable', error: err.message };
  }
}

function gapHealth(h: HealthInputs, dbFailed: boolean): HealthReport['gap_limit'] {
  const live = readUnlessFailed(dbFailed, () => h.ctx.repos.xpubs.listActive().filter((x) => x.env === 'live')) ?? [];
  return {
    at_limit: live.filter((x) => gapLimitReached(x, h.clock.now())).map((x) => x.id),
    lowest_headroom: live.length === 0 ? null : Math.min(...live.map(gapHeadroom)),
  };
}

function restoredBackupHealth(h: HealthInputs, dbFailed: boolean): HealthReport['restored_backup'] {
  const mark = readUnlessFailed(dbFailed, () => keysToSkipAfterRestore(h.ctx));
  return mark ? { taken_at: mark.takenAt, keys_to_skip: mark.xpubIds } : null;
}

function rateHealth(ctx: Context): HealthReport['rates'] {
  try {
    const r = ctx.rates!.current();
    return { status: 'ok', usd_per_btc: (r.rateCentsPerBtc / 100).toFixed(2), source: r.source, fetched_at: new Date(r.fetchedAt).toISOString() };
  } catch {
    return { status: 'unavailable', usd_per_btc: null, source: null, fetched_at: null };
  }
}
