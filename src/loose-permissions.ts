import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SECRET_KEY_FILE } from './auth/secret-box.ts';
import { CONFIG_FILES } from './config.ts';
import { DB_FILE } from './db/connection.ts';

/**
 * The data directory's files that others than their owner may open, with their
 * mode: till.db holds key hashes and sealed webhook secrets, secret.key opens
 * them, a settings file may hold the RPC password. Till makes them 0600; a copy
 * or restore (cp without -p, an archive) may not keep that.
 */
export function listLoosePermissions(dataDir: string): string[] {
  const loose: string[] = [];
  for (const name of [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, SECRET_KEY_FILE, ...CONFIG_FILES]) {
    const mode = statSync(join(dataDir, name), { throwIfNoEntry: false })?.mode;
    if (mode !== undefined && (mode & 0o077) !== 0) loose.push(`${name} (${(mode & 0o777).toString(8).padStart(4, '0')})`);
  }
  return loose;
}
