import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The CLI's entry point, for tests that spawn it themselves. */
export const TILL = fileURLToPath(new URL('../../cli/till.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs root's commands without its capabilities: files of another owner are as closed to them as to any user. */
const POWERLESS = ['setpriv', '--bounding-set=-all', '--inh-caps=-all'];

/**
 * Runs the real `till` CLI as a child process on the pinned Node; `powerless`:
 * without root's capabilities (see powerlessRoot).
 */
export function runTill(args: string[], opts: { dataDir?: string; env?: Record<string, string>; timeoutMs?: number; powerless?: boolean } = {}): Promise<CliResult> {
  const fullArgs = opts.dataDir ? ['--data-dir', opts.dataDir, ...args] : args;
  const [command, ...argv] = [...(opts.powerless ? POWERLESS : []), process.execPath, TILL, ...fullArgs];
  return new Promise((resolve, reject) => {
    const child = spawn(command!, argv, {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TILL_LOG_LEVEL: 'silent', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command with --json and parses its output; fails the test on a non-zero exit. */
export async function tillJson<T = any>(args: string[], opts: { dataDir: string; env?: Record<string, string> }): Promise<T> {
  const r = await runTill(['--json', ...args], opts);
  if (r.code !== 0) throw new Error(`till ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** runTill on a running test till's data dir, on its network (a data dir serves one network), allowing private receivers as it does. */
export function runTillBeside(
  till: { config: { dataDir: string; network: string; allowPrivateCallbacks: boolean } },
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliResult> {
  const env = { TILL_NETWORK: till.config.network, TILL_ALLOW_PRIVATE_CALLBACKS: String(till.config.allowPrivateCallbacks), ...opts.env };
  return runTill(args, { ...opts, dataDir: till.config.dataDir, env });
}

/**
 * Null when commands can run as root without its capabilities (runTill's
 * `powerless`), so a test can meet files of another owner (chown them to
 * OTHER_UID) as a wrong user would; else why not: root ignores permissions,
 * and only root can give files away.
 */
export async function powerlessRoot(): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'not root: cannot give files to another user';
  const probe = await runTill(['--version'], { powerless: true }).catch((err: Error) => ({ code: null, stderr: err.message }));
  return probe.code === 0 ? null : `setpriv cannot drop root's capabilities here: ${probe.stderr.trim()}`;
}

/** The owner of the files a test gives away (nobody). */
export const OTHER_UID = 65534;
