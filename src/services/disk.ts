import { statfsSync } from 'node:fs';
import { ApiError } from '../domain/errors.ts';
import type { Context } from './context.ts';

const CHECK_EVERY_MS = 1000;
let lastCheck = { at: -Infinity, dir: '', freeBytes: Infinity };

/** Free bytes on the data directory's filesystem, re-read at most once a second. */
export function freeDiskBytes(dataDir: string, nowMs = performance.now()): number {
  if (lastCheck.dir !== dataDir || nowMs - lastCheck.at >= CHECK_EVERY_MS) {
    let s;
    try {
      s = statfsSync(dataDir);
    } catch (err) {
      // Not cached: asked again at the next write, which succeeds once the directory is back.
      throw new ApiError('database_unavailable', `cannot read the free space where Till keeps its data (${(err as NodeJS.ErrnoException).code ?? String(err)}): is the data directory still there and mounted?`);
    }
    lastCheck = { at: nowMs, dir: dataDir, freeBytes: s.bavail * s.bsize };
  }
  return lastCheck.freeBytes;
}

/**
 * Refuses a write while free space is under the configured floor, so SQLite
 * never meets a full disk in the middle of a transaction.
 */
export function assertDiskWritable(ctx: Context): void {
  const floor = ctx.config.minFreeDiskMb * 1024 * 1024;
  if (floor > 0 && freeDiskBytes(ctx.config.dataDir) < floor) {
    throw new ApiError('disk_full', `less than ${ctx.config.minFreeDiskMb} MB free where Till keeps its data; writes are paused until space is freed`);
  }
}

/** A write an API request asks for: refused below the disk floor (before it is queued), then run by the write queue. */
export function runRequestedWrite<T>(ctx: Context, fn: () => T): Promise<T> {
  assertDiskWritable(ctx);
  return ctx.writes.run(fn);
}
