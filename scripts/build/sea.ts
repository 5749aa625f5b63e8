import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, extname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../cli/node-flags.ts';
import { ASSET_PREFIX, MANIFEST_ASSET, type Extractable, type Manifest } from '../../src/embedded.ts';
import type { Target } from './target.ts';

const ASSETS_DIR = fileURLToPath(new URL('../../assets/', import.meta.url));
// Node's SEA docs name this fuse; postject must flip it or the blob is ignored.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const require = createRequire(import.meta.url);

/** Files of assets/ the server reads (by readAsset), keyed as the binary looks them up. */
export function listStaticAssets(): Record<string, string> {
  const assets: Record<string, string> = {};
  for (const entry of readdirSync(ASSETS_DIR, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name === 'till.service') continue;
    const path = join(entry.parentPath, entry.name);
    assets[ASSET_PREFIX + relative(ASSETS_DIR, path).split('\\').join('/')] = path;
  }
  return assets;
}

/**
 * The manifest the binary reads to extract its native files: each file's
 * on-disk name carries its content hash, so two versions never share a file
 * and a present file of the right size is the right one.
 */
export function writeManifest(files: Record<Extractable, string>, out: string): Record<string, string> {
  const manifest = {} as Manifest;
  const assets: Record<string, string> = {};
  for (const [name, path] of Object.entries(files) as Array<[Extractable, string]>) {
    const bytes = readFileSync(path);
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
    const ext = extname(path);
    const asset = `native/${name}${ext}`;
    manifest[name] = { asset, file: `${name}-${hash}${ext}`, size: bytes.length };
    assets[asset] = path;
  }
  writeFileSync(out, JSON.stringify(manifest, null, 2));
  return { ...assets, [MANIFEST_ASSET]: out };
}

/**
 * Makes the SEA preparation blob from the bundle and the assets, with the
 * target's own Node (the blob, and the V8 code cache in it, must match the binary).
 */
export function writeSeaBlob(target: Target, workDir: string, main: string, assets: Record<string, string>): string {
  const blob = join(workDir, 'sea-prep.blob');
  const config = {
    main,
    output: blob,
    disableExperimentalSEAWarning: true,
    // V8's compiled code goes in too: the CLI starts without parsing the bundle.
    useCodeCache: true,
    // The flags `npm run till` passes (cli/node-flags.ts).
    execArgv: [...NODE_FLAGS],
    assets,
  };
  const configFile = join(workDir, 'sea-config.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const [cmd, ...args] = target.runNode;
  run(cmd!, [...args, '--experimental-sea-config', configFile]);
  return blob;
}

/** Copies the target's Node to `out`, strips it, and injects the blob (postject, run by this Node, reads any ELF). */
export function writeExecutable(target: Target, blob: string, out: string): void {
  copyFileSync(target.node, out);
  chmodSync(out, 0o755);
  stripSymbols(target.strip, out);
  // Its CLI in a child process: the ELF library inside prints warnings about
  // node's notes sections on every run, which only matter if it fails.
  const args = [require.resolve('postject/dist/cli.js'), out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE];
  if (process.platform === 'darwin') args.push('--macho-segment-name', 'NODE_SEA');
  run(process.execPath, args);
}

/** The npm Node carries debug symbols (~10 MB); a missing `strip` costs only size, so it is a warning. */
function stripSymbols(strip: string, file: string): void {
  const before = statSync(file).size;
  const r = spawnSync(strip, [file], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') {
    process.stderr.write(`build: \`${strip}\` not found (binutils): the binary keeps its debug symbols\n`);
    return;
  }
  if (r.status !== 0) throw new Error(`strip ${file} failed: ${r.stderr.toString().trim()}`);
  process.stdout.write(`  stripped node: ${mb(before)} -> ${mb(statSync(file).size)}\n`);
}

export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function run(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: Buffer; stdout?: Buffer; message: string };
    throw new Error(`${basename(cmd)} ${args.join(' ')} failed: ${(e.stderr?.toString() || e.stdout?.toString() || e.message).trim()}`);
  }
}
