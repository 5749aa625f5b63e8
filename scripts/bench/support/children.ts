import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../../cli/node-flags.ts';
import { onCleanup } from './cleanup.ts';

export const PROJECT_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A port free on 127.0.0.1 right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** The `--port <1-65535>` argument of a bench server script. */
export function readPortArg(argv: string[]): number {
  const i = argv.indexOf('--port');
  const port = Number(argv[i + 1]);
  if (i < 0 || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error('usage: --port <1-65535>');
  return port;
}

/** Starts a bench server script (`scripts/bench/<name>`, taking --port) and waits until `probePath` answers. */
export async function startBenchServer(script: string, probePath: string): Promise<{ child: NodeChild; url: string }> {
  const port = await freePort();
  const child = startNode([script, '--port', String(port)]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(url + probePath, child);
  return { child, url };
}

export interface NodeChild {
  proc: ChildProcess;
  /** The last 8 KiB the child wrote to stderr, for error messages. */
  stderrTail(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Open an IPC channel (process.send in the child). */
  ipc?: boolean;
}

/** `till serve <args>` as `npm run till -- serve` runs it (with Till's Node flags). */
export function startTillServe(args: string[], opts: StartOptions = {}): NodeChild {
  return startNode([...NODE_FLAGS, 'cli/till.ts', 'serve', ...args], opts);
}

/** Runs `node <args>` from the project root with this same Node; stdout goes to /dev/null. */
export function startNode(args: string[], opts: StartOptions = {}): NodeChild {
  const proc = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'ignore', 'pipe', ...(opts.ipc ? (['ipc'] as const) : [])],
  });
  let tail = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-8192);
  });
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  const forget = onCleanup(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return {
    proc,
    stderrTail: () => tail,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      forget();
    },
  };
}

/** Polls url until it answers (any status); fails if the child exits or timeoutMs passes. */
export async function waitForHttp(url: string, child: NodeChild, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      throw new Error(`${child.proc.spawnargs.slice(1).join(' ')} exited (${child.proc.exitCode ?? child.proc.signalCode}):\n${child.stderrTail()}`);
    }
    try {
      await (await fetch(url, { signal: AbortSignal.timeout(1000) })).arrayBuffer();
      return;
    } catch {
      // Not listening yet.
    }
    if (performance.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${child.stderrTail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resident memory of a process in MiB, now (VmRSS) and at its peak (VmHWM), from /proc. */
export function readMemoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** A guard for IPC messages shaped `{ type, ... }`: `ofType<M, 'ready'>('ready')`. */
export function ofType<M extends { type: string }, K extends M['type']>(type: K): (m: unknown) => m is Extract<M, { type: K }> {
  return (m): m is Extract<M, { type: K }> => typeof m === 'object' && m !== null && (m as { type?: unknown }).type === type;
}

/** Waits for the first IPC message from a child that satisfies `match` (rejects if `match` throws). */
export function nextMessage<T>(child: NodeChild, match: (m: unknown) => m is T, timeoutMs = 20_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown) => {
      let matched: boolean;
      try {
        matched = match(m);
      } catch (err) {
        // A guard may throw to fail the wait (the child reported an error).
        done();
        reject(err);
        return;
      }
      if (!matched) return;
      done();
      resolve(m as T);
    };
    const onExit = () => {
      done();
      reject(new Error(`child exited before answering:\n${child.stderrTail()}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`child did not answer within ${timeoutMs} ms:\n${child.stderrTail()}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.proc.off('message', onMessage);
      child.proc.off('exit', onExit);
    };
    child.proc.on('message', onMessage);
    child.proc.once('exit', onExit);
  });
}
