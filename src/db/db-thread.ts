import { Worker } from 'node:worker_threads';
import { sqliteForThread } from '../embedded.ts';
import type { Db } from './connection.ts';
import { commitJobs, runStatementsOn, type Outcome, type Statement } from './write-queue.ts';

// A worker thread with its own connection to the database, for the work the
// event loop should not do:
// - WAL checkpoints. By default the connection that commits also checkpoints:
//   every ~1,000 pages it copies the WAL back into the database file and
//   fsyncs it, inside a request. On a database of a million invoices that is a
//   third of every creation's cost. Here the thread runs PASSIVE checkpoints
//   (they never block the writer or readers), and the server's connection
//   checkpoints itself only if the WAL grows past a safety bound (the thread
//   stopped or fell far behind).
// - WAL restarts. SQLite starts the WAL over only when a write transaction
//   begins with every frame copied, which under steady group commits never
//   happens by itself (a checkpoint takes longer than the gap between two):
//   the WAL grew to the safety bound and the server's connection checkpointed
//   it inside a commit, stalling the event loop 15-35 ms several times a
//   second. Past RESTART_PAGES the thread copies what it can, again until a
//   round is quick, then asks for a pause in commits (restartWal): the write
//   queue commits nothing until the thread has copied the last few frames,
//   and its next commit starts the WAL over. The pause is one short
//   checkpoint (~3 ms under load), and the event loop keeps serving meanwhile.
// - Commits of writes that are plain statements (webhook attempt outcomes):
//   the write queue hands such batches here, so their SQLite work and fsync
//   leave the event loop. The thread waits out another process's lock itself.
// Its commits are another connection's to the server's: `PRAGMA data_version`
// moves with each, as with the CLI's.

/** The server's connection still checkpoints past this many WAL pages (64 MiB). */
export const WRITER_CHECKPOINT_PAGES = 16_384;
/** Past this many WAL pages (16 MiB) the thread asks for the pause that starts the WAL over. */
export const RESTART_PAGES = 4_096;
/** A checkpoint round this quick leaves little for the pause; the rounds before asking for it are at most PRECOPY_ROUNDS. */
const QUICK_ROUND_MS = 2;
const PRECOPY_ROUNDS = 4;
// Shorter rounds leave each database fsync less to flush while the WAL's fdatasync waits behind it: 40 ms
// against 100 gave the creation p99 ~0.6 ms for no measurable rate (docs/PERFORMANCE.md, thirtieth round).
const DEFAULT_INTERVAL_MS = 40;
/** The thread retries a failing checkpoint every interval: the same failure is reported again at most this often. */
export const CHECKPOINT_REPORT_MS = 60_000;

// The thread's whole program. Plain CommonJS given as source, not a .ts
// module: a worker that loads TypeScript also loads the type stripper, which
// doubled its memory (~23 MiB against ~12). The group commit is the write
// queue's own function, taken from its source text (already plain JS once
// Node has stripped the types).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const binding = workerData.nativeBinding ? { nativeBinding: workerData.nativeBinding } : {};
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs, ...binding });
db.pragma('synchronous = ' + workerData.synchronous);
db.pragma('foreign_keys = ON');
${commitJobs}
${runStatementsOn}
const prepared = new Map();
const runJob = (statements) => runStatementsOn(db, prepared, statements);
const plainError = (err) => ({ message: String(err && err.message || err), code: err && err.code });
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
/** Copies what it can of the WAL into the database: the WAL's length in pages, and whether every one was copied. */
const checkpointWal = () => {
  const { log, checkpointed } = checkpoint.get();
  return { log, all: checkpointed === log };
};
/** Copies again what was committed during the previous round, until a round is quick. */
const copyUntilQuick = () => {
  for (let round = 0; round < ${PRECOPY_ROUNDS}; round++) {
    const started = performance.now();
    checkpointWal();
    if (performance.now() - started < ${QUICK_ROUND_MS}) return;
  }
};
let failing = false;
/** The server's connection was asked for a pause to start the WAL over and has not given it yet. */
let restartAsked = false;
/** The last pause could not copy every frame: a reader of another connection holds an old snapshot. */
let readerHolds = false;
const timer = setInterval(() => {
  try {
    const { log, all } = checkpointWal();
    if (all) readerHolds = false;
    if (!restartAsked && !readerHolds && log >= workerData.restartPages) {
      copyUntilQuick();
      restartAsked = true;
      parentPort.postMessage({ type: 'restart-wanted' });
    }
    if (failing) parentPort.postMessage({ type: 'checkpoint-ok' });
    failing = false;
  } catch (err) {
    failing = true;
    parentPort.postMessage({ type: 'checkpoint-error', message: err.message });
  }
}, workerData.intervalMs);
parentPort.on('message', (msg) => {
  if (msg.type === 'stop') {
    clearInterval(timer);
    db.close();
    parentPort.close();
    return;
  }
  if (msg.type === 'restart') {
    // The server's connection commits nothing until this answers: every frame gets copied, unless another connection's reader holds some.
    try {
      readerHolds = !checkpointWal().all;
    } catch {
      // The timer's next checkpoint fails too and reports it.
    }
    restartAsked = false;
    parentPort.postMessage({ type: 'restart-done' });
    return;
  }
  let reply;
  try {
    const batch = JSON.parse(msg.batch);
    const jobs = batch.jobs.map((job) => job.map(([i, params]) => ({ sql: batch.sql[i], params })));
    const outcomes = commitJobs(db, jobs, runJob).map((o) => (o.ok ? o : { ok: false, error: plainError(o.error) }));
    reply = { type: 'committed', id: msg.id, outcomes };
  } catch (err) {
    reply = { type: 'committed', id: msg.id, error: plainError(err) };
  }
  parentPort.postMessage(reply);
});
`;

type Reply =
  | { type: 'checkpoint-error'; message: string }
  | { type: 'checkpoint-ok' }
  | { type: 'restart-wanted' }
  | { type: 'restart-done' }
  | { type: 'committed'; id: number; outcomes?: Outcome[]; error?: { message: string; code?: string } };

export interface DbThread {
  /** False once the thread has stopped or died: its batches go nowhere. */
  readonly running: boolean;
  /** Commits each job's statements, the jobs together (see commitJobs); outcomes hold each job's `changes`. */
  commit(jobs: Statement[][]): Promise<Outcome[]>;
  /** The WAL is long and nearly all copied: the thread asks for the pause of restartWal. */
  readonly wantsWalRestart: boolean;
  /**
   * Copies the WAL's last frames into the database; resolves when done (at
   * once if the thread has stopped; asked again meanwhile, with the same
   * pause). Call it when this process has no commit
   * under way and make none until it resolves: the next commit then starts
   * the WAL over instead of making it longer.
   */
  restartWal(): Promise<void>;
  stop(): Promise<void>;
}

/** An error from the thread, with the SQLite code the 503 translation reads. */
function errorFrom(e: { message: string; code?: string }): Error {
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {});
}

export interface DbThreadOptions {
  intervalMs?: number;
  /** RESTART_PAGES unless given (tests). */
  restartPages?: number;
  busyTimeoutMs: number;
  /** The thread failed, or its checkpoints fail (the same failure at most once per CHECKPOINT_REPORT_MS, with how often it recurred). */
  onError: (err: Error) => void;
  /** Checkpoints succeed again after failing. */
  onRecovered?: () => void;
  /** Milliseconds on Till's clock (the system's if not given). */
  now?: () => number;
}

/** Starts the thread for `db` (the server's connection; file-backed, WAL), with the same durability. */
export function startDbThread(db: Db, opts: DbThreadOptions): DbThread {
  db.pragma(`wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`);
  const workerData = {
    // better-sqlite3 from node_modules; in the single binary, copies it extracted.
    ...sqliteForThread(),
    path: db.name,
    intervalMs: opts.intervalMs ?? DEFAULT_INTERVAL_MS,
    restartPages: opts.restartPages ?? RESTART_PAGES,
    busyTimeoutMs: opts.busyTimeoutMs,
    synchronous: db.pragma('synchronous', { simple: true }) as number,
  };
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData,
    // A few statements: a small heap keeps the thread to a few MiB.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
  });
  const pending = new Map<number, { resolve: (o: Outcome[]) => void; reject: (err: Error) => void }>();
  let nextId = 1;
  let running = true;
  let wantsWalRestart = false;
  /** The pause of a WAL restart under way: resolved when the thread has copied the WAL. */
  let restart: PromiseWithResolvers<void> | null = null;
  /** Nothing is waiting for the thread: it may be left running as the process exits. */
  const unrefIfIdle = () => {
    if (pending.size === 0 && !restart) worker.unref();
  };
  const endRestart = () => {
    restart?.resolve();
    restart = null;
    unrefIfIdle();
  };
  const fail = (err: Error) => {
    running = false;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
    endRestart();
  };
  const reportCheckpoints = checkpointReporter(opts);
  const settleCommit = (msg: Extract<Reply, { type: 'committed' }>) => {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    unrefIfIdle();
    if (msg.error) p.reject(errorFrom(msg.error));
    else p.resolve(msg.outcomes!.map((o) => (o.ok ? o : { ok: false, error: errorFrom(o.error as { message: string; code?: string }) })));
  };
  worker.on('message', (msg: Reply) => {
    if (msg.type === 'committed') settleCommit(msg);
    else if (msg.type === 'restart-wanted') wantsWalRestart = true;
    else if (msg.type === 'restart-done') endRestart();
    else reportCheckpoints(msg);
  });
  worker.on('error', (err) => {
    fail(err);
    opts.onError(err);
  });
  worker.on('exit', () => fail(new Error('the database thread has stopped')));
  // The process may exit while it checkpoints (the writer's own bound still
  // holds), but not while a commit is under way.
  worker.unref();
  let stopped: Promise<void> | null = null;
  return {
    get running() {
      return running;
    },
    commit(jobs) {
      if (!running) return Promise.reject(new Error('the database thread has stopped'));
      // As one JSON string (a structured clone of the parameter objects cost
      // ~10 µs a job on this event loop), each SQL text in it once.
      const sql: string[] = [];
      const index = new Map<string, number>();
      const packed = jobs.map((job) =>
        job.map(({ sql: text, params }) => {
          let i = index.get(text);
          if (i === undefined) index.set(text, (i = sql.push(text) - 1));
          return [i, params] as const;
        }),
      );
      return new Promise<Outcome[]>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ type: 'commit', id, batch: JSON.stringify({ sql, jobs: packed }) });
      });
    },
    get wantsWalRestart() {
      return wantsWalRestart && running;
    },
    restartWal() {
      wantsWalRestart = false;
      if (!running) return Promise.resolve();
      if (!restart) {
        restart = Promise.withResolvers<void>();
        worker.ref();
        worker.postMessage({ type: 'restart' });
      }
      return restart.promise;
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        if (!running) return resolve();
        // Batches sent before this are answered first; none is sent after.
        running = false;
        worker.ref();
        worker.once('exit', () => resolve());
        worker.postMessage({ type: 'stop' });
      });
      return stopped;
    },
  };
}

/**
 * A failing checkpoint is retried every interval (a full disk fails it ten
 * times a second): the first failure is reported, the same one again only
 * once a period has passed, saying how often it recurred meanwhile.
 */
function checkpointReporter(opts: DbThreadOptions): (msg: { type: 'checkpoint-error'; message: string } | { type: 'checkpoint-ok' }) => void {
  let last: { message: string; at: number; repeats: number } | null = null;
  return (msg) => {
    if (msg.type === 'checkpoint-ok') {
      last = null;
      opts.onRecovered?.();
      return;
    }
    const now = (opts.now ?? Date.now)();
    if (last?.message === msg.message) {
      if (now - last.at < CHECKPOINT_REPORT_MS) {
        last.repeats++;
        return;
      }
      const repeats = last.repeats;
      last = { message: msg.message, at: now, repeats: 0 };
      return opts.onError(new Error(`WAL checkpoint failed: ${msg.message} (${repeats} more times since it was last reported)`));
    }
    last = { message: msg.message, at: now, repeats: 0 };
    opts.onError(new Error(`WAL checkpoint failed: ${msg.message}`));
  };
}
