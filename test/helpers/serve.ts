import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

/** A running `till serve --demo` child process. */
export interface Serving {
  url: string;
  key: string;
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
        resolve({ url, key, pid: child.pid!, output: () => out, errors: () => err, exited, stop: () => end('SIGTERM'), crash: () => end('SIGKILL'), signal: (sig) => child.kill(sig) });
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`serve exited ${code ?? signal}: ${out}${err}`)));
  });
}
