import { Command } from 'commander';
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SECRET_KEY_FILE } from '../../src/auth/secret-box.ts';
import { systemClock } from '../../src/clock.ts';
import { assertDatabaseExists, databasePath } from '../../src/db/connection.ts';
import { configFrom } from '../context.ts';
import { emit } from '../output.ts';

/** 2026-11-22T04-55-01Z: sortable, and safe in every file system. */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
}

export function backupCommand(): Command {
  return new Command('backup')
    .description('copy the database (a consistent snapshot, also while the server runs) and the secret key into a new folder')
    .requiredOption('--out <dir>', 'where to put the backup folder')
    .action(async function (this: Command) {
      const config = configFrom(this);
      const target = resolve(this.opts().out, `till-backup-${stamp(systemClock.now())}`);
      if (existsSync(target)) this.error(`${target} exists already`);
      // Read-only, as it is: a backup taken before an upgrade keeps the old
      // schema, and a mistyped --data-dir is an error, not an empty database.
      assertDatabaseExists(config.dataDir);
      const db = new Database(databasePath(config.dataDir), { readonly: true, fileMustExist: true, timeout: config.busyTimeoutMs });
      mkdirSync(target, { recursive: true, mode: 0o700 });
      const key = join(config.dataDir, SECRET_KEY_FILE);
      try {
        // One read transaction: a consistent copy while the server writes, which
        // SQLite's online backup is not sure to finish (it starts over after
        // every commit by another connection).
        db.prepare('VACUUM INTO ?').run(join(target, 'till.db'));
        chmodSync(join(target, 'till.db'), 0o600);
        // Without secret.key the webhook secrets sealed in till.db cannot be read.
        if (existsSync(key)) {
          copyFileSync(key, join(target, SECRET_KEY_FILE));
          chmodSync(join(target, SECRET_KEY_FILE), 0o600);
        }
      } catch (err) {
        // Whole or not at all: a folder without its key would restore unreadable secrets.
        rmSync(target, { recursive: true, force: true });
        throw err;
      } finally {
        db.close();
      }
      emit(this.optsWithGlobals(), { path: target, files: ['till.db', ...(existsSync(key) ? [SECRET_KEY_FILE] : [])] }, () =>
        `backup written to ${target}\nto restore: stop Till, delete till.db-wal and till.db-shm from the data directory, copy both files into it, start Till`);
    });
}
