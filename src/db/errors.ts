import { ApiError } from '../domain/errors.ts';

const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|READONLY|NOTADB|CORRUPT|PERM|AUTH)/;

/** Whether SQLite failed for a full disk. */
export function isDiskFull(err: unknown): boolean {
  return String((err as { code?: unknown })?.code).startsWith('SQLITE_FULL');
}

/**
 * Turns SQLite's infrastructure failures into the spec's retryable 503s; any
 * other error is returned unchanged. A full disk is disk_full, a lock held
 * past the busy timeout or an unreadable file is database_unavailable.
 */
export function translateDbError(err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return err;
  if (isDiskFull(err)) return new ApiError('disk_full', 'the disk Till writes to is full; nothing was written');
  if (UNAVAILABLE.test(code)) return new ApiError('database_unavailable', 'the database cannot be reached right now; nothing was written, retry later');
  return err;
}
