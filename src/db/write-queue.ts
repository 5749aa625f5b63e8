import type { Db } from './connection.ts';

// Group commit. With synchronous=FULL every commit waits for an fsync, which
// would cap creation at a few hundred per second. Writes queued in the same
// turn of the event loop run in one IMMEDIATE transaction, each inside its own
// savepoint, so one failing write rolls back alone and one fsync covers them
// all. Every caller's promise settles only after the commit: a resolved write
// is on disk.

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface WriteQueue {
  run<T>(fn: () => T): Promise<T>;
}

export function createWriteQueue(db: Db, maxBatch = 512): WriteQueue {
  let queue: Job[] = [];
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const jobs = queue.splice(0, maxBatch);
    if (queue.length > 0) schedule();
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      db.transaction(() => {
        for (const job of jobs) {
          try {
            results.push({ ok: true, value: db.transaction(job.fn)() });
          } catch (error) {
            results.push({ ok: false, error });
          }
        }
      }).immediate();
    } catch (error) {
      // The commit itself failed (disk, lock timeout): nothing of the batch is written.
      jobs.forEach((job) => job.reject(error));
      return;
    }
    jobs.forEach((job, i) => {
      const r = results[i]!;
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
