import { Command, Option } from 'commander';
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, mkdtempSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { openSecretBox, SECRET_KEY_FILE, SecretKeyError } from '../../src/auth/secret-box.ts';
import { systemClock } from '../../src/clock.ts';
import { CONFIG_FILES, ConfigError } from '../../src/config.ts';
import { assertDatabaseExists, assertWritableFileSystem, databasePath, refuseStaleWal } from '../../src/db/connection.ts';
import { createWebhookEndpointsRepo } from '../../src/db/webhook-endpoints.ts';
import { makeDirs } from '../../src/make-dirs.ts';
import { markBackupCopy } from '../../src/services/restored-backup.ts';
import { dropServerLease } from '../../src/services/server-lease.ts';
import { listUnreadableSecrets } from '../../src/services/webhooks.ts';
import { configFrom } from '../context.ts';
import { emit, mandatory, warn } from '../output.ts';

/** 2026-11-22T04-55-01Z: sortable, and safe in every file system. */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
}

/**
 * Where a backup is built: a hidden folder, renamed to its `till-backup-…` name
 * only once complete, so that name never holds half a backup (a copy killed
 * part-way restored to an empty till). One killed part-way leaves its hidden
 * `.till-backup-…` folder, which can be deleted.
 */
function makePartialFolder(out: string, now: number): string {
  if (existsSync(out) && !statSync(out).isDirectory()) throw new ConfigError(`--out ${out} is a file, not a folder: give the folder to put the backup in`);
  try {
    makeDirs(out);
  } catch (err) {
    throw new ConfigError(`cannot create --out ${out} (${(err as NodeJS.ErrnoException).code}): ${whatToGive(err)}`);
  }
  try {
    return mkdtempSync(resolve(out, `.till-backup-${stamp(now)}-`));
  } catch (err) {
    // A folder made by root, say, for a backup run as the till user.
    throw new ConfigError(`cannot write in --out ${out} (${(err as NodeJS.ErrnoException).code}): ${whatToGive(err)}`);
  }
}

/** A read-only mount (a snapshot's, an unplugged disk's) said as such: no permission would make it writable. */
function whatToGive(err: unknown): string {
  return (err as NodeJS.ErrnoException).code === 'EROFS' ? 'it is on a read-only file system; give a folder on a writable one' : 'give a folder this user can write in';
}

/** A full disk where the backup goes, said as such: SQLite's own words ("database or disk is full") do not say which disk. */
function explainWriteError(err: unknown, out: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return new ConfigError(`no space left for the backup in --out ${out} (${code}): nothing was written; free some, or give another folder`);
  return err;
}

/** Gives a complete backup its name; two backups in one second (a script, a retry) get -2, -3, … */
function publishBackupFolder(partial: string, out: string, now: number): string {
  for (let n = 1; ; n++) {
    const target = resolve(out, `till-backup-${stamp(now)}${n === 1 ? '' : `-${n}`}`);
    // rename(2) would replace an empty folder of that name: never another backup's, which has files.
    try {
      renameSync(partial, target);
      return target;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'EEXIST' && code !== 'ENOTEMPTY') || n >= 100) throw err;
    }
  }
}

/**
 * What a restore of this backup would find wrong with its secret.key (the data
 * dir's, just copied into it), or null: a key Till cannot use, or webhook
 * secrets in the copied database it does not open (another till's key). Said,
 * not refused: the database is worth keeping all the same, and so is a backup
 * this check itself fails on.
 */
function secretKeyProblem(dataDir: string, copy: Database.Database): string | null {
  try {
    const secrets = openSecretBox(dataDir, { sealedSecrets: () => 1 });
    secrets.load();
    const unreadable = listUnreadableSecrets({ secrets, repos: { webhookEndpoints: createWebhookEndpointsRepo(copy) } }).length;
    if (unreadable === 0) return null;
    return `${unreadable} webhook signing secret${unreadable === 1 ? '' : 's'} in this backup cannot be opened with its secret.key (another till's key?): ` +
      'deliveries they sign fail, here and after a restore, until they are replaced (till webhooks rotate --unreadable)';
  } catch (err) {
    if (err instanceof SecretKeyError) return `${err.message}. This backup's copy of it is no better`;
    return `the backup's secret.key could not be checked against its webhook secrets (${(err as Error).message})`;
  }
}

/** On disk before the folder is named: a power cut after the rename must not find the files' blocks missing. */
function syncToDisk(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function backupCommand(): Command {
  return new Command('backup')
    .description('copy the database (a consistent snapshot, also while the server runs), the secret key and the settings file into a new folder')
    .addOption(mandatory(new Option('--out <dir>', 'where to put the backup folder')))
    .action(async function (this: Command) {
      const config = configFrom(this);
      // Read-only, as it is: a backup taken before an upgrade keeps the old
      // schema, and a mistyped --data-dir is an error, not an empty database.
      assertDatabaseExists(config.dataDir);
      assertWritableFileSystem(config.dataDir);
      refuseStaleWal(config.dataDir);
      const db = new Database(databasePath(config.dataDir), { readonly: true, fileMustExist: true, timeout: config.busyTimeoutMs });
      const now = systemClock.now();
      const out = this.opts().out;
      const partial = makePartialFolder(out, now);
      const key = join(config.dataDir, SECRET_KEY_FILE);
      const copied = ['till.db'];
      let keyProblem: string | null = null;
      let target: string;
      try {
        // One read transaction: a consistent copy while the server writes, which
        // SQLite's online backup is not sure to finish (it starts over after
        // every commit by another connection).
        db.prepare('VACUUM INTO ?').run(join(partial, 'till.db'));
        chmodSync(join(partial, 'till.db'), 0o600);
        // Without secret.key the webhook secrets sealed in till.db cannot be read; the settings name the node and network.
        for (const name of [SECRET_KEY_FILE, ...CONFIG_FILES]) {
          if (!existsSync(join(config.dataDir, name))) continue;
          copyFileSync(join(config.dataDir, name), join(partial, name));
          chmodSync(join(partial, name), 0o600);
          copied.push(name);
        }
        const copy = new Database(join(partial, 'till.db'));
        try {
          // A backup is no running server: restored (beside the original, or after it), its lease would refuse a start.
          dropServerLease(copy);
          // Restored, it hands out again the addresses of invoices made after it: the till it starts says so.
          markBackupCopy(copy, now);
          if (copied.includes(SECRET_KEY_FILE)) keyProblem = secretKeyProblem(config.dataDir, copy);
        } finally {
          copy.close();
        }
        for (const name of copied) syncToDisk(join(partial, name));
        syncToDisk(partial);
        target = publishBackupFolder(partial, out, now);
      } catch (err) {
        // Whole or not at all: a folder without its key would restore unreadable secrets.
        rmSync(partial, { recursive: true, force: true });
        throw explainWriteError(err, out);
      } finally {
        db.close();
      }
      syncToDisk(resolve(out));
      if (keyProblem) warn(keyProblem);
      if (!copied.includes(SECRET_KEY_FILE)) warn(`${key} is missing, so this backup has none: the webhook secrets in it cannot be read; replace them after a restore (till webhooks rotate --unreadable)`);
      emit(this.optsWithGlobals(), { path: target, files: copied }, () =>
        `backup written to ${target} (${copied.join(', ')})\nto restore: stop Till, delete till.db-wal and till.db-shm from the data directory, copy these files into it, start Till`);
    });
}
