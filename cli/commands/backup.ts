import { Command } from 'commander';
import { chmodSync, copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SECRET_KEY_FILE } from '../../src/auth/secret-box.ts';
import { systemClock } from '../../src/clock.ts';
import { openDatabase } from '../../src/db/connection.ts';
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
      mkdirSync(target, { recursive: true, mode: 0o700 });
      const db = openDatabase(config.dataDir, { synchronous: config.synchronous, busyTimeoutMs: config.busyTimeoutMs });
      try {
        // SQLite's online backup: a consistent copy even while the server writes.
        await db.backup(join(target, 'till.db'));
        chmodSync(join(target, 'till.db'), 0o600);
      } finally {
        db.close();
      }
      // Without secret.key the webhook secrets sealed in till.db cannot be read.
      const key = join(config.dataDir, SECRET_KEY_FILE);
      if (existsSync(key)) {
        copyFileSync(key, join(target, SECRET_KEY_FILE));
        chmodSync(join(target, SECRET_KEY_FILE), 0o600);
      }
      emit(this.optsWithGlobals(), { path: target, files: ['till.db', ...(existsSync(key) ? [SECRET_KEY_FILE] : [])] }, () =>
        `backup written to ${target}\nto restore: stop Till, copy both files into the data directory, start Till`);
    });
}
