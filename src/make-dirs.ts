import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * `mkdir -p`, one level at a time. Node 24's recursive mkdirSync spins for
 * ever where a folder that exists cannot hold folders (/proc/x: ENOENT from a
 * parent it finds there); this throws that ENOENT instead. Each folder made
 * gets `mode`, as the recursive form gives it.
 */
export function makeDirs(path: string, mode = 0o777): void {
  const target = resolve(path);
  const missing: string[] = [];
  for (let p = target; !existsSync(p); p = dirname(p)) {
    missing.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  // A file of that name (or one made there meanwhile) is no folder, as mkdir -p says too.
  if (!statSync(target).isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${target}'`), { code: 'ENOTDIR' });
}
