import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The CLI's entry point, for tests that spawn it themselves. */
export const TILL = fileURLToPath(new URL('../../cli/till.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `till` CLI as a child process on the pinned Node. */
export function runTill(args: string[], opts: { dataDir?: string; env?: Record<string, string>; timeoutMs?: number; user?: { uid: number; gid: number } } = {}): Promise<CliResult> {
  const fullArgs = opts.dataDir ? ['--data-dir', opts.dataDir, ...args] : args;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [TILL, ...fullArgs], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TILL_LOG_LEVEL: 'silent', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...opts.user,
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
 * A user other than the one whose files a test makes (root ignores permissions, so a root test runs the
 * command as nobody), or why there is none: a checkout that user cannot read, or a non-root runner.
 */
export async function otherUser(): Promise<{ user: { uid: number; gid: number } } | { skip: string }> {
  if (process.getuid?.() !== 0) return { skip: 'not root: cannot run a command as another user' };
  const user = { uid: 65534, gid: 65534 };
  const probe = await runTill(['--version'], { user });
  return probe.code === 0 ? { user } : { skip: `user 65534 cannot run this checkout's CLI: ${probe.stderr.trim()}` };
}
