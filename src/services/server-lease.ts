import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { inTransaction, type Db } from '../db/connection.ts';
import { createMetaRepo } from '../db/meta.ts';
import type { Context } from './context.ts';

// One `till serve` per data directory: two would both run the webhook worker
// and the chain watcher on the same rows. The server holds a lease in SQLite,
// renewed every few seconds; another server refuses to start while it is
// fresh and its process runs. A crashed server's lease goes stale, or is
// taken over at once on its own host. The CLI takes no lease.

const KEY = 'server_lease';
export const LEASE_TTL_MS = 15_000;
export const LEASE_RENEW_MS = 5_000;

interface Lease {
  owner: string;
  pid: number;
  host: string;
  /** The kernel's boot id (Linux), absent elsewhere and in leases of older versions. */
  boot?: string;
  renewedAt: number;
}

export class LeaseHeldError extends Error {
  override name = 'LeaseHeldError';
}

/** Another server took the lease while this one missed its renewals (paused, suspended): this one must stop. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

const owner = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2)}`;

/** Changes with every boot: a lease of an earlier boot of this host binds nobody. */
const bootId = readBootId();

function readBootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * A lease whose process no longer runs on this host binds nobody: a crashed
 * server restarted at once (systemd waits 5 s), or a backup restored with
 * the lease it was taken with. Nor one of an earlier boot: its pid may be
 * another process's now, and a machine without a clock battery may boot with
 * a time before the lease's last renewal, which would look fresh.
 */
function holderGone(held: Lease): boolean {
  if (held.host !== hostname()) return false;
  if (held.boot && bootId && held.boot !== bootId) return true;
  try {
    process.kill(held.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function ourLease(renewedAt: number): Lease {
  return { owner, pid: process.pid, host: hostname(), boot: bootId, renewedAt };
}

/** The lease of another server that still runs, or null. */
function otherServer(held: Lease | null, now: number): Lease | null {
  return held && held.owner !== owner && now - held.renewedAt < LEASE_TTL_MS && !holderGone(held) ? held : null;
}

/** Removes the lease from a copy of the database (a backup): the copy is no running server. */
export function dropServerLease(db: Db): void {
  createMetaRepo(db).delete(KEY);
}

/**
 * openDatabase's beforeUpgrade for `dataDir`: a newer Till (a CLI command run
 * after updating, before the service restarted) must not change the schema
 * under the older server still running on it.
 */
export function refuseUpgradeUnderServer(dataDir: string, now: () => number): (db: Db) => void {
  return (db) => {
    const held = otherServer(createMetaRepo(db).getJson<Lease>(KEY), now());
    if (held) {
      throw new LeaseHeldError(
        `the database in ${dataDir} needs upgrading for this version of Till, but a till serve (pid ${held.pid} on ${held.host}) is running on it, likely the version before: stop or restart that server first (it upgrades the database as it starts)`,
      );
    }
  };
}

/** Takes the lease or throws LeaseHeldError naming the holder; renew() keeps it, or throws LeaseLostError. */
export function acquireServerLease(ctx: Context): { renew(): void; release(): void } {
  const now = () => ctx.clock.now();
  inTransaction(ctx.db, () => {
    const held = otherServer(ctx.repos.meta.getJson<Lease>(KEY), now());
    if (held) {
      throw new LeaseHeldError(
        `another till serve (pid ${held.pid} on ${held.host}) is running on ${ctx.config.dataDir}; stop it first (a crashed one's claim lapses after ${LEASE_TTL_MS / 1000} s)`,
      );
    }
    ctx.repos.meta.setJson(KEY, ourLease(now()));
  });
  return {
    renew() {
      inTransaction(ctx.db, () => {
        const held = ctx.repos.meta.getJson<Lease>(KEY);
        if (held && held.owner !== owner) {
          throw new LeaseLostError(
            `another till serve (pid ${held.pid} on ${held.host}) took over ${ctx.config.dataDir} while this one missed its lease renewals for over ${LEASE_TTL_MS / 1000} s (paused or suspended?); this one stops`,
          );
        }
        ctx.repos.meta.setJson(KEY, ourLease(now()));
      });
    },
    release() {
      inTransaction(ctx.db, () => {
        if (ctx.repos.meta.getJson<Lease>(KEY)?.owner === owner) ctx.repos.meta.delete(KEY);
      });
    },
  };
}
