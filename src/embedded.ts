import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { extname, isAbsolute, join, resolve } from 'node:path';
import * as sea from 'node:sea';
import { makeDirs } from './make-dirs.ts';

// What the single executable (npm run build, scripts/build/) carries that a
// checkout reads from node_modules and assets/: the native addons, the SQLite
// driver the database thread requires, and the static files. This module is
// the one seam: outside the binary its answers are what the checkout always did.

/** True when running as the single executable. */
export const IN_BINARY = sea.isSea();

/** The variable that overrides where the binary extracts its native addons. */
export const CACHE_DIR_ENV = 'TILL_CACHE_DIR';

/** Written by scripts/build/sea.ts: each extractable file's asset key and what it should be on disk. */
export const MANIFEST_ASSET = 'manifest.json';
/** Static files are embedded under this prefix plus their name in assets/. */
export const ASSET_PREFIX = 'assets/';

export interface ManifestEntry {
  asset: string;
  /** The file name on disk: its content hash is part of it, so an upgrade never loads an older copy. */
  file: string;
  size: number;
}
/** Names the build embeds: the two native addons and the database thread's driver (better-sqlite3 as one CommonJS file). */
export type Extractable = 'better-sqlite3' | 'zeromq' | 'sqlite-driver';
export type Manifest = Record<Extractable, ManifestEntry>;

let manifest: Manifest | null = null;
const loaded = new Map<Extractable, object>();

function readManifest(): Manifest {
  return (manifest ??= JSON.parse(sea.getAsset(MANIFEST_ASSET, 'utf8')) as Manifest);
}

/**
 * Where the binary's native files go: $TILL_CACHE_DIR, else the XDG cache
 * (~/.cache/till). Not the temp dir: it is often mounted noexec, and dlopen
 * needs to map the file executable.
 */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env[CACHE_DIR_ENV]) return resolve(env[CACHE_DIR_ENV]);
  // The XDG spec says to ignore a relative XDG_CACHE_HOME.
  // HOME as os.homedir() reads it (the passwd entry only when HOME is unset).
  const home = env.HOME ?? homedir();
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache');
  // An empty HOME would put it in whatever folder the command runs from.
  if (!isAbsolute(xdg)) throw new Error('HOME is not set, so there is no ~/.cache');
  return join(xdg, 'till');
}

/**
 * The file on disk, written on first use. Written whole and fsynced under a
 * name of its own, then renamed into place: a reader (another till starting
 * at the same moment) sees no file or the whole one, and two writers just
 * rename identical bytes over each other.
 */
function extract(name: Extractable, dir = cacheDir()): string {
  const entry = readManifest()[name];
  const target = join(dir, entry.file);
  if (statSync(target, { throwIfNoEntry: false })?.size === entry.size) return target;
  makeDirs(dir, 0o700);
  const temp = `${target}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temp, 'wx', 0o700);
  try {
    writeSync(fd, new Uint8Array(sea.getRawAsset(entry.asset)));
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(temp, target);
  removeOtherBuilds(dir, name, entry.file);
  return target;
}

/**
 * Other builds' copies of this file (its name with another content hash):
 * left alone, every upgrade would leave its addons behind for good. A Till of
 * another build still running keeps what it loaded (Linux keeps an open file
 * until closed), and one started later writes its own again.
 */
function removeOtherBuilds(dir: string, name: Extractable, keep: string): void {
  const ext = extname(keep);
  const isCopy = (file: string) => file.startsWith(`${name}-`) && file.endsWith(ext) && /^[0-9a-f]{16}$/.test(file.slice(name.length + 1, -ext.length));
  try {
    for (const file of readdirSync(dir)) if (file !== keep && isCopy(file)) rmSync(join(dir, file), { force: true });
  } catch {
    // Tidying only: what cannot be removed stays.
  }
}

/**
 * A native addon from the binary, loaded once, when first used: zeromq's when
 * serve starts its ZMQ feed, SQLite's when a command opens a database (the
 * other commands need no cache folder).
 */
export function loadNativeAddon(name: 'better-sqlite3' | 'zeromq'): object {
  const done = loaded.get(name);
  if (done) return done;
  const module = { exports: {} };
  extractOrExit(name, (path) => process.dlopen(module, path));
  loaded.set(name, module.exports);
  return module.exports;
}

/** What the database thread requires (it runs plain CommonJS, outside the bundle), and the addon path it passes as nativeBinding. */
export function sqliteForThread(): { driver: string; nativeBinding?: string } {
  if (!IN_BINARY) return { driver: createRequire(import.meta.url).resolve('better-sqlite3') };
  return { driver: extractOrExit('sqlite-driver'), nativeBinding: extractOrExit('better-sqlite3') };
}

/**
 * In the binary, loads SQLite's addon now: a command that cannot goes no
 * further than a --version would, and leaves no data directory or empty
 * database behind. Outside it better-sqlite3 loads its own from node_modules.
 */
export function loadSqliteAddon(): void {
  if (IN_BINARY) loadNativeAddon('better-sqlite3');
}

/**
 * The file on disk (then `use`d: loaded). Without it nothing that needs it
 * can run, and the fault is the setup's: a failure ends the process with one
 * line saying what failed, where, and the one setting that fixes it.
 */
function extractOrExit(name: Extractable, use?: (path: string) => void): string {
  let dir = '';
  let path = '';
  try {
    dir = cacheDir();
    path = extract(name, dir);
    use?.(path);
    return path;
  } catch (err) {
    const failed = path ? `load the ${name} native addon from ${path}` : `write the binary's native addons${dir ? ` to ${dir}` : ''}`;
    process.stderr.write(
      `till: cannot ${failed} (${(err as Error).message}): set ${CACHE_DIR_ENV} to a folder this user can write and run code from` +
        `${path ? ' (not a noexec mount), or remove that file if it is damaged' : ''}\n`,
    );
    process.exit(1);
  }
}

/** An embedded static file by its name in assets/ ("checkout/index.html"); null when the binary has none. */
export function embeddedAsset(name: string): Uint8Array<ArrayBuffer> | null {
  try {
    return new Uint8Array(sea.getAsset(ASSET_PREFIX + name));
  } catch {
    return null;
  }
}
