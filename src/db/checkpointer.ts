import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
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

interface WorkerConfig {
  path: string;
  intervalMs: number;
  busyTimeoutMs: number;
}

export interface Checkpointer {
  stop(): Promise<void>;
}

/** Starts the checkpoint thread for `db` (the server's connection; file-backed, WAL). */
export function startCheckpointer(db: Db, opts: { intervalMs?: number; busyTimeoutMs: number; onError: (err: Error) => void }): Checkpointer {
  db.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
  const config: WorkerConfig = { path: db.name, intervalMs: opts.intervalMs ?? DEFAULT_INTERVAL_MS, busyTimeoutMs: opts.busyTimeoutMs };
  const worker = new Worker(new URL(import.meta.url), { workerData: config });
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

function runWorker(config: WorkerConfig): void {
  const db = new Database(config.path, { timeout: config.busyTimeoutMs });
  // A checkpoint fsyncs the database file before the WAL may be reused.
  db.pragma('synchronous = FULL');
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  const timer = setInterval(() => {
    try {
      checkpoint.run();
    } catch (err) {
      parentPort!.postMessage({ error: (err as Error).message });
    }
  }, config.intervalMs);
  parentPort!.on('message', () => {
    clearInterval(timer);
    db.close();
    parentPort!.close();
  });
}

if (!isMainThread && parentPort && (workerData as WorkerConfig | undefined)?.path) {
  runWorker(workerData as WorkerConfig);
}
