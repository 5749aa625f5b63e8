import { readdirSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import type { Db } from '../connection.ts';

// The first 48 bytes of the -shm file are the WAL-index header
// (sqlite.org/walformat.html, stable since 3.7.0). Every commit, by any
// connection of any process, rewrites it with its change counter moved on,
// and it is written last in the commit, so a header read after a commit
// returned is the new one.
const HEADER_BYTES = 48;

export interface WalIndexHeader {
  /**
   * Reads the header; true when it differs from the previous call's (always
   * on the first). False proves no commit since the previous call.
   */
  changed(): boolean;
}

/**
 * The WAL-index header of `db`, read through SQLite's own descriptor of the
 * -shm file (found in /proc/self/fd), never one of ours: closing any
 * descriptor of a file drops every POSIX lock the process holds on it,
 * SQLite's locks included. SQLite keeps that descriptor open while any
 * connection of this process has the database open, so it is valid as long
 * as `db` is. Null where there is none to find (not Linux, not WAL, a
 * database without a file); callers then ask SQLite.
 *
 * Why: `PRAGMA data_version` starts a read transaction, a shared-memory lock
 * taken and dropped with two fcntl calls; one pread is about half of that, and
 * on a busy VM each syscall avoided shows (docs/DECISIONS.md).
 */
export function findWalIndexHeader(db: Db): WalIndexHeader | null {
  const fd = findShmDescriptor(db);
  if (fd === null) return null;
  const now = Buffer.alloc(HEADER_BYTES);
  const seen = Buffer.alloc(HEADER_BYTES);
  let seenValid = false;
  return {
    changed() {
      let read = 0;
      try {
        read = readSync(fd, now, 0, HEADER_BYTES, 0);
      } catch {
        // Unreadable: say "changed", and SQLite answers.
      }
      const same = read === HEADER_BYTES && seenValid && now.equals(seen);
      now.copy(seen);
      seenValid = read === HEADER_BYTES;
      return !same;
    },
  };
}

function findShmDescriptor(db: Db): number | null {
  if (db.memory || db.name === '') return null;
  let shmPath: string;
  let entries: string[];
  try {
    shmPath = realpathSync(db.name) + '-shm';
    entries = readdirSync('/proc/self/fd');
  } catch {
    return null;
  }
  for (const entry of entries) {
    try {
      if (readlinkSync(`/proc/self/fd/${entry}`) === shmPath) return Number(entry);
    } catch {
      // Closed since the listing (another thread's file): not ours.
    }
  }
  return null;
}
