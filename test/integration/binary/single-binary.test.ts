import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { ARM64_PACKAGES, missingArm64Tools, qemuArm64 } from '../../../scripts/build/target.ts';
import { installDebianPackages } from '../../helpers/apt.ts';
import { whenServing } from '../../helpers/serve.ts';
import { tempDir } from '../../helpers/temp.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { startFakeBitcoind } from '../../fakes/bitcoind/index.ts';

// The single executable as a merchant gets it: built from these sources
// (npm run build, into a temp dir), run from an empty folder with nothing
// but a PATH and a HOME (no node, no node_modules, no assets/ beside it).

const ROOT = new URL('../../../', import.meta.url);
const BUILD = new URL('scripts/build/build.ts', ROOT).pathname;
const INSTALL = new URL('install.sh', ROOT).pathname;
const { version } = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { version: string };
const run = promisify(execFile);

describe('the single binary', () => {
  // Built once for both tests (about 10 s).
  const dir = mkdtempSync(join(tmpdir(), 'till-binary-'));
  const binary = join(dir, 'till');
  before(() => run(process.execPath, [BUILD, '--out', binary], { maxBuffer: 1 << 20 }));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('runs the CLI and serves the demo from an empty folder', (t) => servesTheDemo(t, [binary]));

  test('commands that open no database run with no cache folder; one that does, with none it can use: one line saying which and what to set, and nothing made', async (t) => {
    const file = join(tempDir(t, 'till-cache-'), 'a-file');
    writeFileSync(file, '');
    const cwd = tempDir(t, 'till-cwd-');
    const unmade = join(tempDir(t, 'till-cache-'), 'cache');
    const cli = (args: string[], env: Record<string, string>) =>
      run(binary, args, { cwd, env: { PATH: '/usr/bin:/bin', ...env } }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
      );
    const cases: Array<[Record<string, string>, string | null]> = [
      [{ TILL_CACHE_DIR: join(file, 'cache') }, `till: cannot write the binary's native addons to ${join(file, 'cache')} (ENOTDIR: not a directory, mkdir '${join(file, 'cache')}'): set TILL_CACHE_DIR to a folder this user can write and run code from\n`],
      [{ HOME: '' }, "till: cannot write the binary's native addons (HOME is not set, so there is no ~/.cache): set TILL_CACHE_DIR to a folder this user can write and run code from\n"],
      [{ TILL_CACHE_DIR: unmade }, null],
    ];
    for (const [env, line] of cases) {
      const what = JSON.stringify(env);
      assert.deepEqual(await cli(['--version'], env), { code: 0, stdout: `${version}\n`, stderr: '' }, what);
      for (const args of [['--help'], ['serve', '--help'], ['config', 'show', '--data-dir', join(cwd, 'data')]]) {
        const r = await cli(args, env);
        assert.equal(r.code, 0, `${args.join(' ')} ${what}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /native addons/, args.join(' '));
      }
      assert.deepEqual(await cli(['bogus'], env), { code: 1, stdout: '', stderr: "till: unknown command 'bogus'\n(see till --help)\n" }, what);
      if (!line) continue;
      for (const args of [['store', 'create', '--name', 'Shop', '--mode', 'test'], ['serve', '--demo', '--port', '0']]) {
        const dataDir = join(cwd, 'data');
        assert.deepEqual(await cli([...args, '--data-dir', dataDir], env), { code: 1, stdout: '', stderr: line }, `${args.join(' ')} ${what}`);
        assert.equal(existsSync(dataDir), false, `${args.join(' ')} made no data directory`);
      }
    }
    assert.equal(existsSync(unmade), false, 'no cache folder was made');
  });

  test('install.sh checks it, then installs it under a prefix; --system --dry-run shows its plan and changes nothing', async (t) => {
    const prefix = join(tempDir(t, 'till-prefix-'), 'bin');
    // A root shell's PATH (useradd is in /usr/sbin).
    const home = tempDir(t, 'till-home-');
    const install = (...args: string[]) => run('sh', [INSTALL, '--binary', binary, ...args], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: home } });
    await assert.rejects(install('--prefix', 'bin'), /--prefix must be an absolute path/);
    await assert.rejects(install('--prefix', '/opt/a|b'), /must not contain/);
    const done = await install('--prefix', prefix);
    assert.match(done.stdout, new RegExp(`installing till ${version} to ${prefix}/till`));
    assert.deepEqual(readdirSync(home), [], 'the check (--version) wrote no cache folder in the installer\'s home');
    assert.equal((await run(join(prefix, 'till'), ['--version'], { env: { PATH: '/usr/bin:/bin' } })).stdout.trim(), version);
    const plan = await install('--prefix', prefix, '--system', '--dry-run');
    assert.match(plan.stdout, /\+ useradd --system .* till|user till exists: kept/);
    assert.match(plan.stdout, /sudo -u till env TILL_CACHE_DIR=\/var\/cache\/till /);
    assert.match(plan.stdout, /\(dry run: nothing was changed\)/);
  });
});

// The Raspberry Pi's binary (64-bit OS), cross-built here and run under
// qemu-user: the same checks, each step several times slower (about 10 s to build, 10 s to run).
const arm64Skip = arm64ToolsMissing();
describe('the linux-arm64 binary, under qemu-user', { skip: arm64Skip ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'till-binary-arm64-'));
  const binary = join(dir, 'till-linux-arm64');
  before(() => run(process.execPath, [BUILD, '--target', 'linux-arm64', '--out', binary], { maxBuffer: 1 << 20 }));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('runs the CLI and serves the demo from an empty folder', (t) => servesTheDemo(t, [...qemuArm64(), binary]));
});

/** Null when qemu-user and the arm64 tools are here (installing them when root), else why the test skips. */
function arm64ToolsMissing(): string | null {
  if (missingArm64Tools().length && process.getuid?.() === 0) installDebianPackages(ARM64_PACKAGES);
  const missing = missingArm64Tools();
  return missing.length ? `no ${missing.join(', ')}: apt-get install -y ${ARM64_PACKAGES.join(' ')} (the test does so itself as root)` : null;
}

/**
 * The binary (run by `command`) answers --version, serves the demo from an empty folder with a bare env, watching
 * a fake bitcoind (a block it mines is seen at once: over ZMQ, its timer re-syncs every 30 s), and stops cleanly on SIGTERM.
 */
async function servesTheDemo(t: TestContext, command: string[]): Promise<void> {
  const [exe, ...pre] = command as [string, ...string[]];
  const home = tempDir(t, 'till-home-');
  const cwd = tempDir(t, 'till-cwd-');
  const env = { PATH: '/usr/bin:/bin', HOME: home };
  const cli = (...args: string[]) => run(exe, [...pre, ...args], { cwd, env });
  // What an older build extracted, and a file that is not one of its copies.
  const cache = join(home, '.cache', 'till');
  mkdirSync(cache, { recursive: true, mode: 0o700 });
  for (const file of ['zeromq-0123456789abcdef.node', 'better-sqlite3-0123456789abcdef.node', 'zeromq-notes.txt']) writeFileSync(join(cache, file), 'old');

  assert.equal((await cli('--version')).stdout.trim(), version);

  const node = await startFakeBitcoind({ rpcPassword: 'demo-node' });
  t.after(() => node.stop());
  const chainFlags = ['--bitcoind', 'true', '--rpc-url', node.rpcUrl, '--rpc-user', 'till'];
  const child = spawn(exe, [...pre, 'serve', '--demo', '--port', '0', ...chainFlags], { cwd, env: { ...env, TILL_RPC_PASSWORD: 'demo-node' }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const till = await whenServing(child);
  assert.match(till.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(till.output(), /use them \(till --help\)/, 'it names itself, not npm, in what it suggests');

  const res = await fetch(`${till.url}/v1/invoices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${till.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount_sats: 10000 }),
  });
  assert.equal(res.status, 201);
  const invoice = (await res.json()) as { id: string; checkout_url: string };

  // The page and its script are embedded assets; the QR code comes from the bundled qrcode.
  const page = await fetch(invoice.checkout_url);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<html/);
  const script = await fetch(`${till.url}/checkout/assets/checkout.js`);
  assert.equal(script.status, 200);
  assert.equal(await script.text(), readFileSync(new URL('assets/checkout/checkout.js', ROOT), 'utf8'));
  assert.equal((await fetch(`${invoice.checkout_url}/qr.svg`)).status, 200);
  // The page without JavaScript is rendered with the page script's own words, bundled from assets/checkout/describe.js.
  const describe = await fetch(`${till.url}/checkout/assets/describe.js`);
  assert.equal(await describe.text(), readFileSync(new URL('assets/checkout/describe.js', ROOT), 'utf8'));
  const plain = await fetch(`${invoice.checkout_url}?plain`);
  assert.equal(plain.status, 200);
  assert.match(await plain.text(), /Waiting for payment/);
  // Its QR code is a PNG, drawn by qrcode with the bundled pngjs.
  const png = await fetch(`${invoice.checkout_url}/qr.png`);
  assert.equal(png.headers.get('content-type'), 'image/png');
  assert.deepEqual([...new Uint8Array(await png.arrayBuffer()).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);

  type Health = { status: string; version: string; chain: { zmq: string; tip_height: number | null } };
  const health = () => fetch(`${till.url}/healthz`).then((r) => r.json() as Promise<Health>);
  // ZeroMQ's addon is loaded when the feed starts, not as the binary starts.
  await waitFor(async () => (await health()).chain.zmq === 'connected', 'the ZMQ feed connected');
  await node.waitForSubscriber(['hashblock']);
  await node.mine(1);
  await waitFor(async () => (await health()).chain.tip_height === node.tipHeight, 'the block mined, told over ZMQ');
  const { status, version: served } = await health();
  assert.deepEqual([status, served], ['ok', version]);

  // A second process on the same data dir (SQLite from the binary too), while the server runs.
  const stores = JSON.parse((await cli('--json', 'store', 'list')).stdout) as Array<{ id: string }>;
  assert.equal(stores.length, 1);

  till.signal('SIGTERM');
  assert.equal(await till.exited, 0);
  // Log lines at error (50) or above: the database thread, say, failed to start.
  const errors = till.output().split('\n').filter((line) => line.startsWith('{') && (JSON.parse(line) as { level: number }).level >= 50);
  assert.deepEqual(errors, []);
  assert.equal(till.errors(), '');
  const cached = readdirSync(cache).sort();
  assert.deepEqual(cached.filter((f) => f.includes('0123456789abcdef')), [], 'an older build\'s copies are removed');
  assert.ok(cached.includes('zeromq-notes.txt'), 'other files are left alone');
  const builds = cached.filter((f) => /^(better-sqlite3|zeromq|sqlite-driver)-[0-9a-f]{16}\.[a-z]+$/.test(f));
  assert.deepEqual(builds.map((f) => f.slice(0, f.lastIndexOf('-'))), ['better-sqlite3', 'sqlite-driver', 'zeromq'], 'this build\'s copies, one each');
}
