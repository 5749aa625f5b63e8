import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { migrate } from './migrate.ts';

export type Db = Database.Database;

export interface OpenOptions {
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a writer waits for another connection's lock (ms). */
  busyTimeoutMs?: number;
  readonly?: boolean;
  /** SQLite's page cache, at most (SQLite's default is 2 MiB). */
  cacheMiB?: number;
}

export const DB_FILE = 'till.db';

export function databasePath(dataDir: string): string {
  return join(dataDir, DB_FILE);
}

/**
 * Opens the data directory's database with Till's pragmas and brings its
 * schema up to date. WAL lets the CLI write while the server reads;
 * synchronous=FULL makes "the API said it exists" mean "it is on disk" (the
 * server's group commits get their fsync from a WalSync instead, off the loop).
 */
export function openDatabase(dataDir: string, opts: OpenOptions = {}): Db {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new Database(databasePath(dataDir), { timeout: opts.busyTimeoutMs ?? 5000 });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    db.pragma('foreign_keys = ON');
    // Statement journals and sorts stay in memory instead of temp files.
    db.pragma('temp_store = MEMORY');
    if (opts.cacheMiB) db.pragma(`cache_size = -${Math.round(opts.cacheMiB * 1024)}`);
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Runs fn in an IMMEDIATE transaction (takes the write lock up front, so
 * two writers never deadlock on a lock upgrade). */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
