import { systemClock } from '../../../src/clock.ts';
import { loadConfig, type Config } from '../../../src/config.ts';
import { openDatabase, type Db } from '../../../src/db/connection.ts';
import { createInvoicesRepo } from '../../../src/db/invoices.ts';
import { createContext, type Context } from '../../../src/services/context.ts';

// Preparing data dirs: stores, keys and xpubs go through the service layer;
// the millions of rows that only need to exist (list pages, watched
// addresses, deliveries waiting for retry) are written with one SQL statement
// in one transaction each, far faster than a million service calls.

// Every receiver a bench runs is on loopback: private receivers allowed.
export const BENCH_ENV = { TILL_NETWORK: 'regtest', TILL_RATES: 'fixed:65000', TILL_BITCOIND: 'false', TILL_ALLOW_PRIVATE_CALLBACKS: 'true' } as const;

/** Till's config for a bench data dir: regtest, fixed rate, no bitcoind unless env says otherwise. */
export function benchConfig(dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    env: { TILL_DATA_DIR: dataDir, ...BENCH_ENV, ...env },
  });
}

/**
 * A context for preparing data: synchronous=NORMAL (nothing measured commits
 * through it), a 256 MiB page cache for the bulk inserts. It must be the data
 * dir's only connection while a bulk insert runs.
 */
export function openSeedContext(dataDir: string): Context {
  const config = benchConfig(dataDir);
  const db = openDatabase(dataDir, { synchronous: 'NORMAL' });
  db.pragma('cache_size = -262144');
  return createContext(db, systemClock, config);
}

/**
 * Runs fn in one transaction with no journal and no syncs (half the time of a
 * WAL transaction of this size). Only for a connection that is the database's
 * only one, on a temp dir that a crash would leave to be thrown away.
 */
function withoutJournal(db: Db, fn: () => void): void {
  db.pragma('journal_mode = DELETE');
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  try {
    db.transaction(fn)();
  } finally {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
  }
}

const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * SQL for an id of src/ids.ts's shape: prefix, 10 base32 characters of the
 * time `msExpr`, then 16 random characters (hex: 64 random bits instead of 80,
 * all within the same alphabet). In SQL because calling newId from SQLite
 * costs ~9 µs a row, 9 s a million.
 */
function sqlId(prefix: string, msExpr: string): string {
  const time = Array.from({ length: 10 }, (_, i) => `substr('${ID_ALPHABET}', ((${msExpr}) >> ${5 * (9 - i)} & 31) + 1, 1)`);
  return `'${prefix}_' || ${time.join(' || ')} || lower(hex(randomblob(8)))`;
}

export interface InvoiceRowsOptions {
  storeId: string;
  /** A dedicated xpub row: address_index runs 0..count-1 and next_index is moved past it. */
  xpubId: string;
  livemode: boolean;
  count: number;
  /** created_at of the first row; each next row is 1 ms later (ids sort the same way). */
  createdFrom: number;
  expiresAt: number;
  /** Synthetic unique addresses: prefix + zero-padded index (no wallet derived them). */
  addressPrefix: string;
}

/**
 * Pending invoices paying random P2WPKH scripts (0x0014 + 20 random bytes),
 * inserted in index order so every B-tree grows at its end, and listed.
 */
export function insertInvoiceRows(db: Db, o: InvoiceRowsOptions): void {
  withoutJournal(db, () => {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @count)
       INSERT INTO invoices (id, store_id, livemode, status, amount_sats, xpub_id, address_index, address, script_hex,
         confirmations_required, late_window_ms, expires_at, created_at, metadata)
       SELECT ${sqlId('inv', '@createdFrom + i')}, @storeId, @livemode, 'pending', 10000, @xpubId, i,
         @addressPrefix || printf('%09d', i), '0014' || lower(hex(randomblob(20))), 1, 604800000, @expiresAt, @createdFrom + i, '{}'
       FROM n`,
    ).run({ ...o, livemode: o.livemode ? 1 : 0 });
    db.prepare('UPDATE xpubs SET next_index = MAX(next_index, ?) WHERE id = ?').run(o.count, o.xpubId);
    // Into the list table, as the server's loop would on its first run.
    createInvoicesRepo(db).listNew();
  });
}

export interface WaitingDeliveriesOptions {
  storeId: string;
  endpoints: Array<{ id: string; url: string }>;
  count: number;
  /** How many of them are due at `now` (the rest wait 1 minute to 1 day). */
  due: number;
  now: number;
}

/**
 * Deliveries waiting for a retry, each of its own event (UNIQUE(event_id,
 * target)), spread over the endpoints. The event bodies are short stand-ins:
 * picking due deliveries reads no body but those of the due rows.
 */
export function insertWaitingDeliveries(db: Db, o: WaitingDeliveriesOptions): void {
  withoutJournal(db, () => {
    const before = (db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM events').get() as { seq: number }).seq;
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @count)
       INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body, dispatched)
       SELECT ${sqlId('evt', '@now - 86400000 + i')}, 'invoice.created', @storeId, NULL, 0, @now - 86400000 + i,
         '{"event_type":"invoice.created","bench":' || i || '}', 1
       FROM n`,
    ).run({ count: o.count, storeId: o.storeId, now: o.now });
    db.prepare('CREATE TEMP TABLE bench_endpoints (k INTEGER PRIMARY KEY, id TEXT NOT NULL, url TEXT NOT NULL)').run();
    const add = db.prepare('INSERT INTO bench_endpoints (k, id, url) VALUES (?, ?, ?)');
    o.endpoints.forEach((e, k) => add.run(k, e.id, e.url));
    // Row k of the new events: the first `due` are due now, the rest from 1 minute to 1 day ahead.
    db.prepare(
      `INSERT INTO webhook_deliveries (id, event_id, store_id, endpoint_id, target, url, status, attempts, total_attempts,
         next_attempt_at, last_attempt_at, last_status_code, created_at)
       SELECT ${sqlId('dlv', 'e.created_at')}, e.id, e.store_id, b.id, b.id, b.url, 'attempting', 3, 3,
         CASE WHEN e.seq - @before <= @due THEN @now - 1000 ELSE @now + 60000 + (e.seq - @before) * 86 END,
         @now - 3600000, 500, e.created_at
       FROM events e JOIN bench_endpoints b ON b.k = e.seq % @endpoints
       WHERE e.seq > @before`,
    ).run({ before, due: o.due, now: o.now, endpoints: o.endpoints.length });
    db.prepare('DROP TABLE bench_endpoints').run();
  });
}
