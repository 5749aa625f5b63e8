import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { isDiskFull } from './errors.ts';
import { MIGRATIONS } from './migrations/index.ts';

export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

/** An upgrade that could not be made, or finished, as things are (a full disk, a broken link): its message says what was kept. */
export class SchemaUpgradeError extends Error {
  override name = 'SchemaUpgradeError';
}

export const LATEST_SCHEMA_VERSION = MIGRATIONS.length;

/** What Till says as it upgrades a database: the one transaction takes seconds to minutes on a large one. */
export const UPGRADE_NOTICE = 'upgrading the database to this version (one transaction: seconds to minutes on a large one; stopped part-way, it stays as it was)';

/**
 * Applies the bundled migrations in order, all in one transaction, and
 * records progress in PRAGMA user_version. An upgrade interrupted (killed, a
 * power cut, a failing migration) leaves the schema the older Till wrote and
 * can still run; the next start upgrades from there. A database written by a
 * newer Till is refused rather than half-understood. `onUpgrade` hears of an
 * upgrade about to run (after `beforeUpgrade` let it).
 */
export function migrate(db: Database.Database, beforeUpgrade?: (db: Database.Database) => void, onUpgrade?: (from: number, to: number) => void): number {
  const from = schemaVersion(db);
  refuseNewer(from);
  if (from === LATEST_SCHEMA_VERSION) return LATEST_SCHEMA_VERSION;
  // A new database (version 0) has nothing that could be using it.
  if (from > 0) {
    beforeUpgrade?.(db);
    onUpgrade?.(from, LATEST_SCHEMA_VERSION);
  }
  // Off while migrations run, as SQLite's way to rebuild a table needs (a
  // DROP TABLE of a referenced table would fail or delete its rows' links);
  // the transaction still checks every link before it commits. The pragma
  // does nothing inside a transaction, hence outside it.
  const foreignKeys = db.pragma('foreign_keys', { simple: true }) as number;
  db.pragma('foreign_keys = OFF');
  const upgrade = db.transaction(() => {
    // Read again under the write lock: another process (the server and a CLI
    // command started together after an upgrade) may have applied some meanwhile.
    const current = schemaVersion(db);
    refuseNewer(current);
    for (const m of MIGRATIONS.slice(current)) {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    }
    if (foreignKeys) refuseBrokenLinks(db);
  });
  try {
    // The write lock is most likely another process's upgrade of the same file
    // (the server and a command started together): on a large database it
    // holds the lock for longer than one busy timeout, so wait it out.
    const deadline = Date.now() + UPGRADE_WAIT_MS;
    for (;;) {
      try {
        upgrade.immediate();
        break;
      } catch (err) {
        if (isDiskFull(err)) throw diskFull(db, from);
        if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw err;
        // A busy timeout of 0 (allowed) would make this a spin: a short pause between tries.
        Atomics.wait(PAUSE, 0, 0, 50);
      }
    }
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  }
  // The upgrade is in the WAL; copying it into the database file grows the file. A disk with room for the one but
  // not the other would fail the next write, with SQLite's own words: say so now.
  if (from > 0) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch (err) {
      if (!isDiskFull(err)) throw err;
      throw new SchemaUpgradeError(
        `the database in ${db.name} was upgraded to schema ${LATEST_SCHEMA_VERSION}, but that left the disk holding it full (${sizeMiB(db)} MiB now, and the upgrade in its WAL beside it): free some space (or move the data directory) and start again`,
      );
    }
  }
  return LATEST_SCHEMA_VERSION;
}

const sizeMiB = (db: Database.Database): number => Math.ceil(statSync(db.name).size / 2 ** 20);

/** How long an upgrade waits for another process's write lock (each try waits the busy timeout). */
export const UPGRADE_WAIT_MS = 30 * 60_000;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** A migration that rebuilds a table (0013) writes it whole to the WAL, then grows the file by it. From 0: a new database. */
export function diskFull(db: Database.Database, from: number): SchemaUpgradeError {
  if (from === 0) return new SchemaUpgradeError(`the disk holding ${db.name} is full: there is no room for a new database. Free some space (or choose another data directory) and start again`);
  return new SchemaUpgradeError(
    `the disk holding ${db.name} is full: upgrading the database from schema ${from} to ${LATEST_SCHEMA_VERSION} rewrites tables and needs free space of up to about twice the database's size (${sizeMiB(db)} MiB now); nothing was changed. Free some space (or move the data directory) and start again`,
  );
}

function refuseBrokenLinks(db: Database.Database): void {
  const broken = db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>;
  if (broken.length > 0) {
    throw new SchemaUpgradeError(
      `after the upgrade ${broken.length} row(s) of ${broken[0]!.table} would point at no ${broken[0]!.parent}, so nothing was changed. Till writes none such: if the database was edited by hand, \`PRAGMA foreign_key_check\` in sqlite3 lists them; or restore a backup`,
    );
  }
}

export function schemaVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function refuseNewer(current: number): void {
  if (current > LATEST_SCHEMA_VERSION) {
    throw new SchemaTooNewError(
      `this database has schema version ${current}, but this Till knows only up to ${LATEST_SCHEMA_VERSION}: it was written by a newer Till. Upgrade Till, or restore a backup made by this version.`,
    );
  }
}
