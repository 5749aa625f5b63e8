import type { Db } from './connection.ts';
import { findWalIndexHeader, type WalIndexHeader } from './internal/wal-index-header.ts';

/** Small named values that are not worth a table: chain tip, last rate, counters. */
export type MetaRepo = ReturnType<typeof createMetaRepo>;

export function createMetaRepo(db: Db) {
  const get = db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?');
  const del = db.prepare<[string]>('DELETE FROM meta WHERE key = ?');
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  let dataVersionNow: number | null = null;
  let lastRead = 0;
  // Looked for after the first read, when SQLite has the -shm file open.
  let header: WalIndexHeader | null | undefined;
  const forgetDataVersion = () => (dataVersionNow = null);
  const set = db.prepare<[string, string]>(
    'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
  );
  return {
    get(key: string): string | null {
      return get.get(key)?.value ?? null;
    },
    set(key: string, value: string): void {
      set.run(key, value);
    },
    /**
     * Moves when another connection (another process) commits: a cheap "did
     * anything change?". Read once per synchronous run: a request's API key
     * cache and view cache both ask, and the pragma (SQLite's shared-memory
     * locks) costs 4-13 µs. A commit landing within the run is seen by the
     * next one, as if it came after. An unchanged WAL-index header (read
     * before the pragma) proves nothing committed since the last pragma, which
     * is then still the answer: one pread instead of a shared-memory lock.
     */
    dataVersion(): number {
      if (dataVersionNow === null) {
        if (header?.changed() === false) {
          dataVersionNow = lastRead;
        } else {
          dataVersionNow = lastRead = dataVersion.get()!;
          if (header === undefined) header = findWalIndexHeader(db);
        }
        queueMicrotask(forgetDataVersion);
      }
      return dataVersionNow;
    },
    delete(key: string): void {
      del.run(key);
    },
    getJson<T>(key: string): T | null {
      const v = get.get(key)?.value;
      return v === undefined ? null : (JSON.parse(v) as T);
    },
    setJson(key: string, value: unknown): void {
      set.run(key, JSON.stringify(value));
    },
  };
}
