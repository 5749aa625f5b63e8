import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Benches start servers and fill temp dirs with gigabytes; both must go even
// when a bench throws or the run is interrupted. Each bench undoes its own in
// `finally`; this registry is the second fence for Ctrl-C and kill.

const tasks = new Set<() => void>();

function runAll(): void {
  for (const task of [...tasks]) {
    tasks.delete(task);
    try {
      task();
    } catch {
      // Best effort: the next task must still run.
    }
  }
}

process.on('exit', runAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    runAll();
    process.exit(130);
  });
}

/** Registers a synchronous undo step; returns a function that runs it now (once). */
export function onCleanup(task: () => void): () => void {
  tasks.add(task);
  return () => {
    if (tasks.delete(task)) task();
  };
}

export interface TempDir {
  path: string;
  remove(): void;
}

export function makeTempDir(prefix: string): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: onCleanup(() => rmSync(path, { recursive: true, force: true })) };
}
