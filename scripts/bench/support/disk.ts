import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { percentile } from './results.ts';

/**
 * Latency of a one-row commit with Till's pragmas (WAL, synchronous=FULL) in
 * `dir`: the fsync every durable write waits for, on this machine's disk.
 */
export function measureDurableCommit(dir: string, commits = 200): { p50: number; p99: number } {
  const file = join(dir, 'commit-probe.db');
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE probe (n INTEGER, body TEXT)');
    const insert = db.prepare('INSERT INTO probe VALUES (?, ?)');
    const times: number[] = [];
    for (let i = 0; i < commits; i++) {
      const started = performance.now();
      db.transaction(() => insert.run(i, 'x'.repeat(1000)))();
      times.push(performance.now() - started);
    }
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    db.close();
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  }
}
