import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Where a cross build keeps the target's Node, fetched once from the npm registry.
const CACHE = join(ROOT, 'node_modules/.cache/till-build');
// The aarch64 C library qemu-user loads the arm64 Node with (Debian's libc6-arm64-cross, libstdc++6-arm64-cross).
const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';
export const ARM64_PACKAGES = ['qemu-user-static', 'binutils-aarch64-linux-gnu', 'libc6-arm64-cross', 'libstdc++6-arm64-cross'];

/** What the binary is built for, and the Node that builds its parts. */
export interface Target {
  /** platform-arch, as Node names them: linux-x64, linux-arm64. */
  name: string;
  /** The Node executable copied into the binary. */
  node: string;
  /** The command that runs that Node here: itself, or qemu-user running it (a cross build). */
  runNode: string[];
  /** The strip that reads the target's executables. */
  strip: string;
  cross: boolean;
}

/** This machine's own target (the default), e.g. linux-x64. */
export const HOST = `${process.platform}-${process.arch}`;
/** Targets built on a machine of another architecture. */
const CROSS_TARGETS = ['linux-arm64'];

/**
 * The target named by --target (this machine's own when none). A cross build
 * runs the target's Node under qemu-user, so the addons it picks and the V8
 * code cache in the blob are the target's, made the same way as a native build's.
 */
export function resolveTarget(name: string = HOST): Target {
  if (name === HOST) return { name, node: process.execPath, runNode: [process.execPath], strip: 'strip', cross: false };
  if (/^linux-arm(v7l?)?$/.test(name)) throw new Error(`32-bit ARM (${name}) is not supported: npm has no Node ${process.versions.node} for it, and better-sqlite3 and zeromq ship no addon built for it. A Raspberry Pi needs its 64-bit OS: --target linux-arm64`);
  if (!CROSS_TARGETS.includes(name)) throw new Error(`unknown target '${name}': it builds for ${[HOST, ...CROSS_TARGETS].join(' or ')}`);
  if (HOST !== 'linux-x64') throw new Error(`--target ${name} is built on linux-x64 (or natively on ${name}), not on ${HOST}`);
  const missing = missingArm64Tools();
  if (missing.length) throw new Error(`--target ${name} needs ${missing.join(', ')}: apt-get install ${ARM64_PACKAGES.join(' ')}`);
  const node = targetNode(name);
  return { name, node, runNode: [...qemuArm64(), node], strip: 'aarch64-linux-gnu-strip', cross: true };
}

/** What a linux-arm64 build (or running its binary) lacks here: empty when nothing. */
export function missingArm64Tools(): string[] {
  return [
    !qemuBinary() && 'qemu-aarch64',
    !existsSync(join(ARM64_SYSROOT, 'lib/ld-linux-aarch64.so.1')) && ARM64_SYSROOT,
    !onPath('aarch64-linux-gnu-strip') && 'aarch64-linux-gnu-strip',
  ].filter((tool) => tool !== false);
}

/** The command prefix that runs an arm64 executable on this machine. */
export function qemuArm64(): string[] {
  return [qemuBinary()!, '-L', ARM64_SYSROOT];
}

function qemuBinary(): string | undefined {
  return ['qemu-aarch64-static', 'qemu-aarch64'].find(onPath);
}

/**
 * The target's Node, the same version as the project's (package.json's `node`):
 * npm's node-<platform>-<arch> package, fetched with `npm pack` (the registry's
 * checksum verified) and kept under node_modules/.cache.
 */
function targetNode(name: string): string {
  const { devDependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  const pkg = `node-${name}@${devDependencies.node}`;
  const dir = join(CACHE, pkg);
  const node = join(dir, 'package/bin/node');
  if (existsSync(node)) return node;
  process.stdout.write(`  fetching ${pkg} from the npm registry\n`);
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', partial, pkg], { encoding: 'utf8' })) as Array<{ filename: string }>;
  execFileSync('tar', ['xzf', join(partial, packed!.filename), '-C', partial]);
  rmSync(join(partial, packed!.filename));
  renameSync(partial, dir);
  return node;
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}
