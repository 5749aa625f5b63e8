import { Command } from 'commander';
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SECRET_KEY_FILE } from '../../src/auth/secret-box.ts';
import { systemClock } from '../../src/clock.ts';
import { CONFIG_FILES } from '../../src/config.ts';
import { assertDatabaseExists, databasePath } from '../../src/db/connection.ts';
import { dropServerLease } from '../../src/services/server-lease.ts';
import { configFrom } from '../context.ts';
import { emit } from '../output.ts';

/** 2026-11-22T04-55-01Z: sortable, and safe in every file system. */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-');
}

/** Makes a new folder named for now; two backups in one second (a script, a retry) get -2, -3, … */
function makeBackupFolder(out: string, now: number): string {
  mkdirSync(out, { recursive: true });
  for (let n = 1; ; n++) {
    const target = resolve(out, `till-backup-${stamp(now)}${n === 1 ? '' : `-${n}`}`);
    try {
      mkdirSync(target, { mode: 0o700 });
      return target;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || n >= 100) throw err;
    }
  }
}

export function backupCommand(): Command {
  return new Command('backup')
    .description('copy the database (a consistent snapshot, also while the server runs) and the secret key into a new folder')
    .requiredOption('--out <dir>', 'where to put the backup folder')
    .action(async function (this: Command) {
      const config = configFrom(this);
      // Read-only, as it is: a backup taken before an upgrade keeps the old
      // schema, and a mistyped --data-dir is an error, not an empty database.
      assertDatabaseExists(config.dataDir);
      const db = new Database(databasePath(config.dataDir), { readonly: true, fileMustExist: true, timeout: config.busyTimeoutMs });
      const target = makeBackupFolder(this.opts().out, systemClock.now());
      const key = join(config.dataDir, SECRET_KEY_FILE);
      const copied = ['till.db'];
      try {
        // One read transaction: a consistent copy while the server writes, which
        // SQLite's online backup is not sure to finish (it starts over after
        // every commit by another connection).
        db.prepare('VACUUM INTO ?').run(join(target, 'till.db'));
        chmodSync(join(target, 'till.db'), 0o600);
        // A backup is no running server: restored (beside the original, or after it), its lease would refuse a start.
        const copy = new Database(join(target, 'till.db'));
        try {
          dropServerLease(copy);
        } finally {
          copy.close();
        }
        // Without secret.key the webhook secrets sealed in till.db cannot be read; the settings name the node and network.
        for (const name of [SECRET_KEY_FILE, ...CONFIG_FILES]) {
          if (!existsSync(join(config.dataDir, name))) continue;
          copyFileSync(join(config.dataDir, name), join(target, name));
          chmodSync(join(target, name), 0o600);
          copied.push(name);
        }
      } catch (err) {
        // Whole or not at all: a folder without its key would restore unreadable secrets.
        rmSync(target, { recursive: true, force: true });
        throw err;
      } finally {
        db.close();
      }
      if (!copied.includes(SECRET_KEY_FILE)) process.stderr.write(`till: warning: ${key} is missing, so this backup has none: the webhook secrets in it cannot be read; rotate them after a restore (till webhooks rotate)\n`);
      emit(this.optsWithGlobals(), { path: target, files: copied }, () =>
        `backup written to ${target} (${copied.join(', ')})\nto restore: stop Till, delete till.db-wal and till.db-shm from the data directory, copy these files into it, start Till`);
    });
}
