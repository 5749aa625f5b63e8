import type { Db } from './connection.ts';

// Group commit. With synchronous=FULL every commit waits for an fsync, which
// would cap creation at a few hundred per second. Writes queued in the same
// turn of the event loop run in one IMMEDIATE transaction and one fsync covers
// them all. A batch first runs plainly; only if one of its writes throws is it
// rolled back and run again with a savepoint per write, so the failing one
// rolls back alone (savepoints make SQLite journal every page they touch,
// which is most of a write's cost when nothing fails). Every caller's promise
// settles only after the commit: a resolved write is on disk.

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface WriteQueue {
  /**
   * Runs fn in the next group commit. `maxWaitMs` lets a write that nobody
   * waits on (a webhook attempt's outcome) hold its commit back that long for
   * company: fewer fsyncs, and any immediate write takes it along earlier.
   */
  run<T>(fn: () => T, maxWaitMs?: number): Promise<T>;
}

class JobFailed extends Error {}

export function createWriteQueue(db: Db, maxBatch = 512): WriteQueue {
  let queue: Job[] = [];
  let scheduled = false;
  let timer: NodeJS.Timeout | null = null;

  const plain = db.transaction((jobs: Job[]): Outcome[] =>
    jobs.map((job) => {
      try {
        return { ok: true, value: job.fn() };
      } catch (error) {
        throw new JobFailed('a write failed', { cause: error });
      }
    }),
  );

  const isolated = db.transaction((jobs: Job[]): Outcome[] =>
    jobs.map((job) => {
      try {
        return { ok: true, value: db.transaction(job.fn)() };
      } catch (error) {
        return { ok: false, error };
      }
    }),
  );

  function flush(): void {
    scheduled = false;
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    const jobs = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    if (jobs.length === 0) return;
    let outcomes: Outcome[];
    try {
      try {
        outcomes = plain.immediate(jobs);
      } catch (err) {
        if (!(err instanceof JobFailed)) throw err;
        outcomes = jobs.length === 1 ? [{ ok: false, error: err.cause }] : isolated.immediate(jobs);
      }
    } catch (error) {
      // The commit itself failed (disk, lock timeout): nothing of the batch is written.
      jobs.forEach((job) => job.reject(error));
      return;
    }
    jobs.forEach((job, i) => {
      const r = outcomes[i]!;
      if (r.ok) job.resolve(r.value);
      else job.reject(r.error);
    });
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  }

  return {
    run<T>(fn: () => T, maxWaitMs = 0): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        if (maxWaitMs <= 0) schedule();
        // The first waiting write sets the deadline; later ones ride along.
        else if (!scheduled && !timer) timer = setTimeout(flush, maxWaitMs);
      });
    },
  };
}
