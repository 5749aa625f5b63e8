import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Db } from './connection.ts';

// WAL checkpoints off the event loop. By default the connection that commits
// also checkpoints: every ~1,000 pages it copies the WAL back into the
// database file and fsyncs it, inside a request. On a database of a million
// invoices that is a third of every creation's cost. Here a worker thread with
// its own connection runs PASSIVE checkpoints (they never block the writer or
// readers), and the server's connection checkpoints itself only if the WAL
// grows past a safety bound (the worker stopped or fell far behind).

/** The server's connection still checkpoints past this many WAL pages (64 MiB). */
export const WRITER_CHECKPOINT_PAGES = 16_384;
const DEFAULT_INTERVAL_MS = 100;

// The thread's whole program. Plain CommonJS given as source, not a .ts
// module: a worker that loads TypeScript also loads the type stripper, which
// doubled its memory (~23 MiB against ~12). The single binary needs no file for it either.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
// A checkpoint fsyncs the database file before the WAL may be reused.
db.pragma('synchronous = FULL');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try {
    checkpoint.run();
  } catch (err) {
    parentPort.postMessage({ error: err.message });
  }
}, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  stop(): Promise<void>;
}

/** Starts the checkpoint thread for `db` (the server's connection; file-backed, WAL). */
export function startCheckpointer(db: Db, opts: { intervalMs?: number; busyTimeoutMs: number; onError: (err: Error) => void }): Checkpointer {
  db.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
  const workerData = {
    driver: createRequire(import.meta.url).resolve('better-sqlite3'),
    path: db.name,
    intervalMs: opts.intervalMs ?? DEFAULT_INTERVAL_MS,
    busyTimeoutMs: opts.busyTimeoutMs,
  };
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData,
    // One statement on a timer: a small heap keeps the thread to a few MiB.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
  });
  worker.on('message', (msg: { error: string }) => opts.onError(new Error(`WAL checkpoint failed: ${msg.error}`)));
  worker.on('error', opts.onError);
  // The process may exit while it runs; the writer's own bound still holds.
  worker.unref();
  let stopped: Promise<void> | null = null;
  return {
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        worker.ref();
        worker.once('exit', () => resolve());
        worker.postMessage('stop');
      });
      return stopped;
    },
  };
}
