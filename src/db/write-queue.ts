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
  run<T>(fn: () => T): Promise<T>;
}

class JobFailed extends Error {}

export function createWriteQueue(db: Db, maxBatch = 512): WriteQueue {
  let queue: Job[] = [];
  let scheduled = false;

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
    const jobs = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
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
    run<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        schedule();
      });
    },
  };
}
