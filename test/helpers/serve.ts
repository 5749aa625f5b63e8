import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { TILL } from './cli.ts';

/** A running `till serve --demo` child process. */
export interface Serving {
  url: string;
  key: string;
  /** The demo store's id, on a fresh data dir ('' otherwise). */
  storeId: string;
  pid: number;
  output: () => string;
  errors: () => string;
  /** The exit code once it exited, or the signal that ended it. */
  exited: Promise<number | NodeJS.Signals | null>;
  stop: () => Promise<void>;
  crash: () => Promise<void>;
  signal: (signal: NodeJS.Signals) => void;
}

/**
 * Resolves once the spawned `till serve --demo` listens and, on a fresh data
 * dir (`seeded` false), printed the demo key ('' otherwise).
 */
export function whenServing(child: ChildProcessByStdio<null, Readable, Readable>, { seeded = false } = {}): Promise<Serving> {
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | NodeJS.Signals | null>((r) => child.once('exit', (code, signal) => r(code ?? signal)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 20_000);
    child.stdout.on('data', (d) => {
      out += d;
      const url = /Till listening on (http:\/\/\S+)/.exec(out)?.[1];
      const key = /svc_test_[0-9A-Za-z]{32}/.exec(out)?.[0] ?? (seeded ? '' : undefined);
      if (url && key !== undefined) {
        clearTimeout(timer);
        const end = (signal: NodeJS.Signals) => new Promise<void>((r) => {
          if (child.exitCode !== null || child.signalCode !== null) return r();
          child.once('exit', () => r());
          child.kill(signal);
        });
        const storeId = /Demo store (sto_\w+)/.exec(out)?.[1] ?? '';
        resolve({ url, key, storeId, pid: child.pid!, output: () => out, errors: () => err, exited, stop: () => end('SIGTERM'), crash: () => end('SIGKILL'), signal: (sig) => child.kill(sig) });
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`serve exited ${code ?? signal}: ${out}${err}`)));
  });
}

/** Starts `till serve --demo` on port 0 (see whenServing); `maxDescriptors`: under that `ulimit -n`. */
export function startServe(dataDir: string, { logLevel = 'silent', seeded = false, env = {} as Record<string, string>, maxDescriptors = 0 } = {}): Promise<Serving> {
  const args = [TILL, '--data-dir', dataDir, '--port', '0', 'serve', '--demo'];
  // `ulimit -n` then exec: the same process, with that many descriptors at most.
  const [command, argv] = maxDescriptors ? ['bash', ['-c', `ulimit -n ${maxDescriptors} && exec "$0" "$@"`, process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(command, argv, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TILL_LOG_LEVEL: logLevel, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return whenServing(child, { seeded });
}
