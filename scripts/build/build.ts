// npm run build [-- --target linux-arm64] [-- --out <file>]: the single
// executable (Node SEA). For this machine's platform and architecture by
// default, dist/till, with the Node npm ci installed (node_modules/node):
// nothing is downloaded. --target linux-arm64 (a Raspberry Pi's 64-bit OS)
// builds dist/till-linux-arm64 on linux-x64 with npm's arm64 Node, fetched
// once, run under qemu-user (scripts/build/target.ts).
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findNativeAddons } from './addons.ts';
import { bundleApp, bundleSqliteDriver } from './bundle.ts';
import { HOST, resolveTarget, type Target } from './target.ts';
import { listStaticAssets, mb, writeExecutable, writeManifest, writeSeaBlob } from './sea.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs one named step, printing its time; a failure names the step. */
async function step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    const result = await fn();
    process.stdout.write(`  ${name} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
    return result;
  } catch (err) {
    throw new Error(`${name} failed: ${(err as Error).message}`, { cause: err });
  }
}

async function buildBinary(target: Target, out: string): Promise<void> {
  const started = performance.now();
  const work = mkdtempSync(join(tmpdir(), 'till-build-'));
  const partial = `${out}.partial`;
  try {
    process.stdout.write(`Building ${out} (Node ${process.versions.node}, ${target.name}${target.cross ? ', its Node run under qemu-user' : ''})\n`);
    const app = join(work, 'till.cjs');
    const driver = join(work, 'sqlite-driver.cjs');
    await step('bundle the app with esbuild', () => bundleApp(app));
    await step('bundle better-sqlite3 for the database thread', () => bundleSqliteDriver(driver));
    const addons = await step('find the native addons Node loads', () => findNativeAddons(target.runNode));
    const assets = { ...listStaticAssets(), ...writeManifest({ ...addons, 'sqlite-driver': driver }, join(work, 'manifest.json')) };
    const blob = await step('make the SEA blob', () => writeSeaBlob(target, work, app, assets));
    // Built beside the target and renamed: a failed build leaves no half-made binary under its name.
    await step('copy node, strip it, inject the blob (postject)', () => {
      mkdirSync(dirname(out), { recursive: true });
      writeExecutable(target, blob, partial);
      renameSync(partial, out);
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    process.stdout.write(`Built ${out}: ${mb(statSync(out).size)} in ${seconds} s\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmQuietly(partial);
  }
}

function rmQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Its folder could not be made: there is nothing to remove.
  }
}

const { values } = parseArgs({ options: { out: { type: 'string' }, target: { type: 'string' } } });
try {
  const target = resolveTarget(values.target);
  // The machine's own is dist/till; another target's carries its name, so the two never collide.
  const out = resolve(values.out ?? join(ROOT, target.name === HOST ? 'dist/till' : `dist/till-${target.name}`));
  await buildBinary(target, out);
} catch (err) {
  process.stderr.write(`build: ${(err as Error).message}\n`);
  process.exit(1);
}
