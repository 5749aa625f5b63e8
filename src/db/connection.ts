import Database from 'better-sqlite3';
import { accessSync, closeSync, constants, openSync, readSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadSqliteAddon } from '../embedded.ts';
import { makeDirs } from '../make-dirs.ts';
import { isDiskFull } from './errors.ts';
import { diskFull, migrate, schemaVersion, SchemaUpgradeError } from './migrate.ts';

export type Db = Database.Database;

export interface OpenOptions {
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a writer waits for another connection's lock (ms). */
  busyTimeoutMs?: number;
  readonly?: boolean;
  /** SQLite's page cache, at most (SQLite's default is 2 MiB). */
  cacheMiB?: number;
  /** Refuse a data dir without a database, rather than create one: a mistyped --data-dir is not a new, empty till. */
  mustExist?: boolean;
  /** Called (and may throw) before an existing database is upgraded to this version's schema. */
  beforeUpgrade?: (db: Db) => void;
  /** Told when an existing database is about to be upgraded (in one transaction: a large one takes a while). */
  onUpgrade?: (from: number, to: number) => void;
}

/**
 * The data directory cannot be used as it is: it cannot be made, holds no
 * database (and was asked not to get one) or one that is not Till's, is
 * another user's, is on a read-only file system, or holds a restored
 * database beside another's WAL.
 */
export class DataDirError extends Error {
  override name = 'DataDirError';
}

/** Throws DataDirError unless `dataDir` holds a database (an empty file, left by a first start killed at once, is none). */
export function assertDatabaseExists(dataDir: string): void {
  let size: number | undefined;
  try {
    size = statSync(databasePath(dataDir), { throwIfNoEntry: false })?.size;
  } catch (err) {
    // Another user's data dir (one made by the till user, a command run as someone else) is there, not missing.
    throw new DataDirError(`cannot look in the data directory ${dataDir} (${(err as NodeJS.ErrnoException).code}): run till as the user that owns it`);
  }
  if (!size) {
    throw new DataDirError(`no Till database in ${dataDir}: check --data-dir (or TILL_DATA_DIR); a new till gets one from till store create or till serve`);
  }
}

export const DB_FILE = 'till.db';

export function databasePath(dataDir: string): string {
  return join(dataDir, DB_FILE);
}

/** Creates the data directory (private to its user) if it is not there. */
export function makeDataDir(dataDir: string): void {
  try {
    makeDirs(dataDir, 0o700);
  } catch (err) {
    // A read-only or someone else's folder (serve --demo makes ./data where it starts).
    throw new DataDirError(`cannot create the data directory ${dataDir} (${(err as NodeJS.ErrnoException).code}): choose another with --data-dir (or TILL_DATA_DIR)`);
  }
}

/**
 * A till.db copied in (a restored backup) beside the -wal of the database it
 * replaced: SQLite would replay that WAL over it at the first open, by any
 * program, and leave it corrupt ("database disk image is malformed"). Till
 * keeps its database in WAL mode, so a file in rollback mode (header bytes 18
 * and 19, which `VACUUM INTO` and so `till backup` write as 1) was copied in,
 * and a WAL with frames beside it is another database's. Checked before SQLite
 * opens the file.
 */
export function refuseStaleWal(dataDir: string): void {
  const wal = `${databasePath(dataDir)}-wal`;
  if (!(statSync(wal, { throwIfNoEntry: false })?.size)) return;
  const header = Buffer.alloc(20);
  let fd: number;
  try {
    fd = openSync(databasePath(dataDir), 'r');
  } catch {
    return; // None to protect, or unreadable: opening it says why.
  }
  try {
    if (readSync(fd, header, 0, 20, 0) < 20) return;
  } finally {
    closeSync(fd);
  }
  if (header[18] === 1 && header[19] === 1) {
    throw new DataDirError(`${wal} belongs to the database that ${DB_FILE} replaced (a restored backup?): SQLite would replay it over the restored file and corrupt it. Delete ${wal} and ${databasePath(dataDir)}-shm, then run the command again (docs/CONFIG.md, Backups)`);
  }
}

/**
 * A data dir on a read-only mount (systemd's ProtectSystem=strict outside the
 * unit's ReadWritePaths=, say) is said as such: SQLite only says it cannot open
 * the file, which sends one checking permissions that are fine. Even a reader
 * (till backup) writes there: SQLite keeps a WAL database's index in till.db-shm.
 */
export function assertWritableFileSystem(dataDir: string): void {
  try {
    accessSync(dataDir, constants.W_OK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EROFS') return;
    throw new DataDirError(`the data directory ${dataDir} is on a read-only file system, and Till writes there (under systemd: name it in the unit's ReadWritePaths=)`);
  }
}

/**
 * What opening a database first does to its data directory, for a command
 * that writes there before it: loads the binary's SQLite addon (one that
 * cannot goes no further and makes nothing), makes the directory, and refuses
 * a read-only file system.
 */
export function prepareDataDir(dataDir: string): void {
  loadSqliteAddon();
  makeDataDir(dataDir);
  assertWritableFileSystem(dataDir);
}

/**
 * Opens the data directory's database with Till's pragmas and brings its
 * schema up to date. WAL lets the CLI write while the server reads;
 * synchronous=FULL makes "the API said it exists" mean "it is on disk" (the
 * server's group commits get their fsync from a WalSync instead, off the loop).
 */
export function openDatabase(dataDir: string, opts: OpenOptions = {}): Db {
  if (opts.mustExist) assertDatabaseExists(dataDir);
  prepareDataDir(dataDir);
  refuseStaleWal(dataDir);
  const fresh = (statSync(databasePath(dataDir), { throwIfNoEntry: false })?.size ?? 0) === 0;
  createPrivately(databasePath(dataDir));
  const db = new Database(databasePath(dataDir), { timeout: opts.busyTimeoutMs ?? 5000 });
  try {
    refuseForeignDatabase(db);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`);
    db.pragma('foreign_keys = ON');
    // Statement journals and sorts stay in memory instead of temp files.
    db.pragma('temp_store = MEMORY');
    if (opts.cacheMiB) db.pragma(`cache_size = -${Math.round(opts.cacheMiB * 1024)}`);
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    migrate(db, opts.beforeUpgrade, opts.onUpgrade);
  } catch (err) {
    const full = err instanceof SchemaUpgradeError ? null : diskFullAtOpen(db, dataDir, fresh, err);
    db.close();
    throw full ?? err;
  }
  return db;
}

/** Below this much free space, an I/O error opening the database is the disk being full. */
const NEARLY_FULL_BYTES = 1024 * 1024;

/**
 * A disk too full for the WAL and shared-memory files SQLite makes beside
 * the database, said as such: SQLite says "disk I/O error" when the -shm file
 * cannot grow, and "database or disk is full" before the first migration.
 */
function diskFullAtOpen(db: Db, dataDir: string, fresh: boolean, err: unknown): Error | null {
  if (!isDiskFull(err)) {
    if (!String((err as { code?: unknown })?.code).startsWith('SQLITE_IOERR')) return null;
    const fs = statfsSync(dataDir);
    if (fs.bavail * fs.bsize >= NEARLY_FULL_BYTES) return null;
  }
  if (fresh) return diskFull(db, 0);
  return new DataDirError(`the disk holding ${db.name} is full: SQLite has no room for its WAL and shared-memory files beside the database (nothing was changed). Free some space (or move the data directory) and start again`);
}

/**
 * Another program's database put where Till's belongs (a wrong --data-dir) is
 * left as it is: at schema 0 Till's own file is empty. Checked before any
 * pragma, as switching to WAL already writes to the file.
 */
function refuseForeignDatabase(db: Db): void {
  if (schemaVersion(db) === 0 && db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get() !== undefined) {
    throw new DataDirError(`${db.name} is not a Till database (it holds tables Till did not make): check --data-dir (or TILL_DATA_DIR)`);
  }
}

/**
 * Creates an empty database file readable by its owner only, whatever the
 * data dir's own mode: it holds key hashes and sealed secrets. SQLite gives
 * its -wal and -shm files the database file's permissions.
 */
function createPrivately(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Runs fn in an IMMEDIATE transaction (takes the write lock up front, so
 * two writers never deadlock on a lock upgrade). */
export function inTransaction<T>(db: Db, fn: () => T): T {
  return db.transaction(fn).immediate();
}
