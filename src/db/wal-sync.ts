import { closeSync, fdatasync, fstatSync, openSync, statSync } from 'node:fs';
import type { Db } from './connection.ts';

/** Makes what was written to a database's WAL durable, off the event loop. */
export interface WalSync {
  /** fdatasync of the WAL file on libuv's thread pool; `done` gets its error, if any. */
  sync(done: (err: Error | null) => void): void;
  /** Closes the descriptor; call once no sync is in flight. */
  close(): void;
}

/**
 * The WAL of `db`, synced through a read-only descriptor of our own: an
 * fsync applies to the file, whichever descriptor wrote to it. SQLite takes
 * no POSIX locks on the -wal file (only on the database and -shm files), so
 * opening and closing one here cannot drop SQLite's locks. The descriptor is
 * opened now, before the server takes connections: opened at the first sync,
 * a flood of connections using up the process's descriptors at that moment
 * failed the sync, and a failed sync stops all writes until a restart. Opened
 * at the first sync where there was no WAL yet, and again if another file took
 * its name. Null where the database is not in WAL mode.
 */
export function openWalSync(db: Db): WalSync | null {
  if (db.memory || db.name === '' || String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return null;
  const path = `${db.name}-wal`;
  let fd: number | null = null;

  function descriptor(): number {
    if (fd !== null) {
      const open = fstatSync(fd);
      const named = statSync(path, { throwIfNoEntry: false });
      // No file by that name (the data dir was moved): SQLite writes to the one open here, so this syncs it.
      if (!named || (named.ino === open.ino && named.dev === open.dev)) return fd;
      closeSync(fd);
      fd = null;
    }
    fd = openSync(path, 'r');
    return fd;
  }
  try {
    descriptor();
  } catch {
    // No WAL file yet: the first sync opens it.
  }

  return {
    sync(done) {
      let f: number;
      try {
        f = descriptor();
      } catch (err) {
        done(err as Error);
        return;
      }
      fdatasync(f, (err) => done(err));
    },
    close() {
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
