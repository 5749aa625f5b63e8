import { ApiError } from '../domain/errors.ts';
import type { Db } from './connection.ts';
import type { DbThread } from './db-thread.ts';
import type { WalSync } from './wal-sync.ts';

// Group commit. With synchronous=FULL every commit waits for an fsync, which
// would cap creation at a few hundred per second. Writes queued in the same
// turn of the event loop run in one IMMEDIATE transaction and one fsync covers
// them all. Every caller's promise settles only after the commit: a resolved
// write is on disk.
//
// Another process (the CLI) holding the write lock is waited for without
// blocking: the batch's BEGIN does not wait in SQLite's busy handler (which
// sleeps the whole event loop) but fails at once, and the batch is tried again
// on a timer. A write still waiting after the connection's busy timeout is
// rejected with SQLITE_BUSY, as the busy handler would have.
//
// A write given as plain statements (no reads, no logic: a webhook attempt's
// outcome) can be committed by the db thread, off the event loop. Commits
// never overlap: while the thread commits a batch, later writes wait for its
// answer, so this process never waits on its own write lock and writes commit
// in the order they were queued. When the thread asks (a long WAL nearly all
// copied), the queue commits nothing while the thread copies the rest, so the
// next commit starts the WAL over (db-thread.ts, "WAL restarts").
//
// With a WalSync (the server's), the fsync leaves the event loop too: a batch
// commits with synchronous=NORMAL and its writes settle once an fdatasync of
// the WAL on the thread pool returns; the loop goes on reading requests
// meanwhile, and the next batch commits after it. Until then the batch is
// visible to this process's readers though not yet on disk, so whatever
// leaves the process (answers, stream messages, webhooks) first waits for
// durable() (docs/DECISIONS.md). At most one batch is ever waiting for its
// fdatasync, so durable() covers every commit a reader could have seen. A
// failed fdatasync cannot take its batch back from the readers, so from then
// on durable() refuses: nothing read leaves the process until a restart.

/** One SQL statement with its named parameters; `changes` is what running it reports. */
export interface Statement {
  sql: string;
  params: Record<string, unknown>;
}

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs every job in one IMMEDIATE transaction. The batch first runs plainly;
 * only if one job throws is it rolled back and run again with a savepoint per
 * job, so the failing one rolls back alone (savepoints make SQLite journal
 * every page they touch, which is most of a write's cost when nothing fails).
 * Throws only when the transaction itself fails (lock timeout, disk): then
 * nothing is written. Self-contained, with no imports: the db thread runs
 * this same function from its source text.
 */
export function commitJobs<J>(db: Db, jobs: J[], runJob: (job: J) => unknown): Outcome[] {
  // A job's own error, told from the transaction's (BEGIN, COMMIT) by identity. Not a class made here:
  // a class made per call kept its batch's every job alive through V8's young collections, until a full
  // one (docs/PERFORMANCE.md, twenty-eighth round).
  let failed: { error: unknown } | null = null;
  const plain = db.transaction((): Outcome[] =>
    jobs.map((job) => {
      try {
        return { ok: true, value: runJob(job) };
      } catch (error) {
        failed = { error };
        throw error;
      }
    }),
  );
  const isolated = db.transaction((): Outcome[] =>
    jobs.map((job) => {
      try {
        return { ok: true, value: db.transaction(() => runJob(job))() };
      } catch (error) {
        // SQLite ended the whole transaction (SQLITE_FULL, an I/O error): what the jobs before wrote went
        // with it, and the rest would commit one by one outside it. The batch fails whole, with this error.
        if (!db.inTransaction) throw error;
        return { ok: false, error };
      }
    }),
  );
  try {
    return plain.immediate();
  } catch (err) {
    const job = failed as { error: unknown } | null;
    if (job === null || err !== job.error) throw err;
    return jobs.length === 1 ? [{ ok: false, error: job.error }] : isolated.immediate();
  }
}

/**
 * Runs the statements in order on `db`, preparing each SQL text once into
 * `prepared`; returns each one's `changes`. Self-contained like commitJobs.
 */
export function runStatementsOn(db: Db, prepared: Map<string, ReturnType<Db['prepare']>>, statements: Statement[]): number[] {
  return statements.map(({ sql, params }) => {
    let stmt = prepared.get(sql);
    if (!stmt) prepared.set(sql, (stmt = db.prepare(sql)));
    return stmt.run(params).changes;
  });
}

interface Job {
  fn: (() => unknown) | null;
  statements: Statement[] | null;
  /** performance.now() when queued: how long it has waited for the lock. */
  since: number;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface WriteQueue {
  /**
   * Runs fn in the next group commit. `maxWaitMs` lets a write that nobody
   * waits on hold its commit back that long for company: fewer fsyncs, and
   * any immediate write takes it along earlier.
   */
  run<T>(fn: () => T, maxWaitMs?: number): Promise<T>;
  /** Runs the statements, in order, in the next group commit; resolves with each one's `changes`. */
  runStatements(statements: Statement[], maxWaitMs?: number): Promise<number[]>;
  /** Lets batches of statements alone commit on `thread` (null: on this connection again). */
  useThread(thread: DbThread | null): void;
  /**
   * Commits batches with their fsync off the event loop, through `sync`
   * (null: with SQLite's own fsync on the loop again; resolves once the
   * fdatasync in flight returned). `onFailure` hears of a failed fdatasync: from then on
   * every write is refused, as nothing more can be promised durable.
   */
  useWalSync(sync: WalSync | null, onFailure?: (err: Error) => void): Promise<void>;
  /**
   * Null when every commit of this queue is on disk; else resolves once it
   * is. Rejects (database_unavailable) once an fdatasync failed: a commit
   * whose fdatasync failed stays visible to readers, so nothing read may
   * leave the process any more.
   */
  durable(): Promise<void> | null;
  /**
   * Runs `read` now if every commit is on disk, else once the fdatasync in
   * flight returned, before any later batch commits: what it reads is on disk.
   * After a failed fdatasync, `read` is not run and the promise rejects.
   */
  whenDurable<T>(read: () => T): T | Promise<T>;
  /**
   * Throws the queue's refusal (database_unavailable or disk_full) once an
   * fdatasync failed: for writes made outside the queue, which stop with it.
   */
  assertWritable(): void;
}

export function createWriteQueue(db: Db, maxBatch = 512): WriteQueue {
  let queue: Job[] = [];
  let scheduled = false;
  let timer: NodeJS.Timeout | null = null;
  let thread: DbThread | null = null;
  /** The thread is committing a batch or copying the WAL for a restart: nothing else commits until it answers. */
  let offThread = false;
  /** A flush came while a batch was off the loop (on the thread, or waiting for its fdatasync): its end flushes again. */
  let flushWaiting = false;
  let walSync: WalSync | null = null;
  /** The connection's own synchronous setting, which everything but the queue's batches keeps (read when a WalSync is attached). */
  let synchronous = 2;
  let onSyncFailure: (err: Error) => void = () => {};
  /** The last batch committed waits for its fdatasync: nothing else commits until it returns. */
  let syncing: Promise<void> | null = null;
  /** An fdatasync failed: what reached the disk is unknown, so no write is taken any more. */
  let syncFailed: ApiError | null = null;
  const prepared = new Map<string, ReturnType<Db['prepare']>>();
  const lockWaitMs = Number(db.pragma('busy_timeout', { simple: true }));
  // A batch's settings, and the connection's again after it. Not prepared
  // once: SQLite applies these PRAGMAs when it compiles them. db.exec, not
  // db.pragma: it makes no statement object (~1 µs for the pair, against ~12:
  // ~4 % of the loop under the creation load).
  const batchSettings = (sync: boolean) => db.exec(sync ? 'PRAGMA busy_timeout = 0; PRAGMA synchronous = NORMAL' : 'PRAGMA busy_timeout = 0');
  const connectionSettings = (sync: boolean) => db.exec(`PRAGMA busy_timeout = ${lockWaitMs}${sync ? `; PRAGMA synchronous = ${synchronous}` : ''}`);
  /** Another connection held the write lock: the queue is tried again when this fires. */
  let lockRetry: NodeJS.Timeout | null = null;
  let lockRetryMs = 0;

  /** The fdatasync in flight, if any; rejects once one failed, including for the readers that waited for it. */
  function durable(): Promise<void> | null {
    if (syncFailed) return Promise.reject(syncFailed);
    return (
      syncing?.then(() => {
        if (syncFailed) throw syncFailed;
      }) ?? null
    );
  }

  function settle(jobs: Job[], outcomes: Outcome[]): void {
    jobs.forEach((job, i) => {
      const r = outcomes[i]!;
      if (r.ok) job.resolve(r.value);
      else job.reject(r.error);
    });
  }

  /** A batch off the loop is done: the flushes that came meanwhile happen now. */
  function flushIfWaiting(): void {
    if (!flushWaiting) return;
    flushWaiting = false;
    schedule();
  }

  function commitOffThread(jobs: Job[], on: DbThread): void {
    offThread = true;
    on.commit(jobs.map((j) => j.statements!))
      .then((outcomes) => settle(jobs, outcomes), (error) => jobs.forEach((job) => job.reject(error)))
      .finally(() => {
        offThread = false;
        flushIfWaiting();
      });
  }

  /** Commits nothing while the thread copies the WAL's last frames; the queued writes commit after. */
  function pauseForWalRestart(on: DbThread): void {
    offThread = true;
    flushWaiting = true;
    void on.restartWal().then(() => {
      offThread = false;
      flushIfWaiting();
    });
  }

  /** Settles the committed batch once `sync` made it durable; settled in its callback, before any later batch commits. */
  function settleWhenDurable(jobs: Job[], outcomes: Outcome[], sync: WalSync): void {
    // Set before sync() is called: its callback may run at once (a descriptor that cannot be opened).
    let synced!: () => void;
    syncing = new Promise((resolve) => (synced = resolve));
    sync.sync((err) => {
      syncing = null;
      if (err) {
        // A full disk is disk_full, as the free-space check would have said had it seen it coming.
        const code = (err as NodeJS.ErrnoException).code === 'ENOSPC' || (err as NodeJS.ErrnoException).code === 'EDQUOT' ? 'disk_full' : 'database_unavailable';
        syncFailed = new ApiError(code, `the disk failed to make a write durable (${err.message}); it may or may not be saved. Till answers nothing from its database until it is restarted: check the disk.`);
        // A write that failed by itself wrote nothing: its own error still says why.
        settle(jobs, outcomes.map((o) => (o.ok ? { ok: false, error: syncFailed } : o)));
        onSyncFailure(err);
      } else {
        settle(jobs, outcomes);
      }
      synced();
      flushIfWaiting();
    });
  }

  function flush(): void {
    scheduled = false;
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    // Waiting for another process's lock: its retry flushes everything queued.
    if (lockRetry) return;
    if (offThread || syncing) {
      flushWaiting = true;
      return;
    }
    if (thread?.wantsWalRestart) return pauseForWalRestart(thread);
    const jobs = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    if (jobs.length === 0) return;
    if (!db.open || syncFailed) {
      // Queued as the server stopped (refused, rather than thrown from a timer), or after a failed fdatasync.
      const error = syncFailed ?? new ApiError('database_unavailable', 'the database is closed (Till is stopping); nothing was written, retry later');
      jobs.forEach((job) => job.reject(error));
      return;
    }
    if (thread?.running && jobs.every((j) => j.statements)) return commitOffThread(jobs, thread);
    const sync = walSync;
    let outcomes: Outcome[];
    // The lock is not waited for in SQLite's busy handler, which would stop the loop; only this queue's
    // batches skip SQLite's fsync: other writes on the connection keep its settings.
    batchSettings(sync !== null);
    try {
      outcomes = commitJobs(db, jobs, (job) => (job.fn ? job.fn() : runStatementsOn(db, prepared, job.statements!)));
    } catch (error) {
      if (String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')) return waitForTheLock(jobs, error);
      // The commit itself failed (disk): nothing of the batch is written.
      jobs.forEach((job) => job.reject(error));
      return;
    } finally {
      connectionSettings(sync !== null);
    }
    lockRetryMs = 0;
    // A batch whose every write failed committed nothing: no fdatasync to wait for.
    if (sync && outcomes.some((o) => o.ok)) settleWhenDurable(jobs, outcomes, sync);
    else settle(jobs, outcomes);
  }

  /** The batch's BEGIN found the lock taken: nothing was written. Its writes wait, up to the busy timeout each. */
  function waitForTheLock(jobs: Job[], error: unknown): void {
    const now = performance.now();
    const waiting: Job[] = [];
    for (const job of jobs) {
      if (now - job.since < lockWaitMs) waiting.push(job);
      else job.reject(error);
    }
    queue = waiting.concat(queue);
    if (queue.length === 0) return;
    // 1, 2, 4 ... 32 ms: soon after a short lock, without spinning through a long one.
    lockRetryMs = Math.min(Math.max(1, lockRetryMs * 2), 32);
    lockRetry = setTimeout(() => {
      lockRetry = null;
      flush();
    }, lockRetryMs);
  }

  function schedule(): void {
    if (scheduled || lockRetry) return;
    scheduled = true;
    setImmediate(flush);
  }

  function enqueue(job: Job, maxWaitMs: number): void {
    queue.push(job);
    if (maxWaitMs <= 0) schedule();
    // The first waiting write sets the deadline; later ones ride along.
    else if (!scheduled && !timer && !lockRetry) timer = setTimeout(flush, maxWaitMs);
  }

  return {
    run<T>(fn: () => T, maxWaitMs = 0): Promise<T> {
      return new Promise<T>((resolve, reject) => enqueue({ fn, statements: null, since: performance.now(), resolve: resolve as (v: unknown) => void, reject }, maxWaitMs));
    },
    runStatements(statements: Statement[], maxWaitMs = 0): Promise<number[]> {
      return new Promise<number[]>((resolve, reject) => enqueue({ fn: null, statements, since: performance.now(), resolve: resolve as (v: unknown) => void, reject }, maxWaitMs));
    },
    useThread(t: DbThread | null): void {
      thread = t;
    },
    async useWalSync(sync: WalSync | null, onFailure?: (err: Error) => void): Promise<void> {
      if (sync && !walSync) synchronous = Number(db.pragma('synchronous', { simple: true }));
      walSync = sync;
      if (onFailure) onSyncFailure = onFailure;
      while (syncing) await syncing;
    },
    durable,
    whenDurable<T>(read: () => T): T | Promise<T> {
      const pending = durable();
      return pending ? pending.then(read) : read();
    },
    assertWritable(): void {
      if (syncFailed) throw syncFailed;
    },
  };
}
