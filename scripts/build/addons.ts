import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Extractable } from '../../src/embedded.ts';

const require = createRequire(import.meta.url);
type Addons = Record<Exclude<Extractable, 'sqlite-driver'>, string>;

/**
 * The native addon files the target's Node loads for better-sqlite3 and
 * zeromq. Asked of that Node rather than guessed from the packages' folders:
 * each package picks one of several prebuilt files by platform, libc and ABI,
 * and the binary must carry the one that runs on it. `runNode` is the command
 * that runs it (under qemu-user for a cross build); this file is what it runs.
 */
export function findNativeAddons(runNode: string[]): Addons {
  const [cmd, ...args] = runNode;
  return JSON.parse(execFileSync(cmd!, [...args, fileURLToPath(import.meta.url)], { encoding: 'utf8' })) as Addons;
}

function loadedAddons(): Addons {
  const Database = require('better-sqlite3') as new (file: string) => { close(): void };
  new Database(':memory:').close();
  require('zeromq');
  const loaded = Object.keys(require.cache).filter((file) => file.endsWith('.node'));
  return { 'better-sqlite3': pickAddon(loaded, 'better-sqlite3'), zeromq: pickAddon(loaded, 'zeromq') };
}

function pickAddon(loaded: string[], pkg: string): string {
  const found = loaded.filter((file) => file.includes(`/node_modules/${pkg}/`));
  if (found.length !== 1) throw new Error(`expected one native addon loaded from ${pkg}, found ${found.length}: ${found.join(', ') || 'none'}`);
  return found[0]!;
}

if (import.meta.main) process.stdout.write(JSON.stringify(loadedAddons()));
