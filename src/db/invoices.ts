import type { Db } from './connection.ts';
import { INVOICE_STATUSES, type Invoice, type InvoiceStatus, type Payment } from '../domain/invoice.ts';
import { outpointKey, watchUntil } from '../domain/invoice-state.ts';
import { getOrInsert } from '../get-or-insert.ts';

interface InvoiceRow {
  rowid: number;
  id: string;
  store_id: string;
  livemode: number;
  status: InvoiceStatus;
  amount_sats: number;
  fiat_amount_cents: number | null;
  currency: 'USD' | null;
  rate_cents_per_btc: number | null;
  rate_source: string | null;
  rate_fetched_at: number | null;
  xpub_id: string;
  address_index: number;
  address: string;
  script_hex: string;
  confirmations_required: number;
  late_window_ms: number;
  expires_at: number;
  created_at: number;
  paid_at: number | null;
  cancelled_at: number | null;
  expired_at: number | null;
  wait_ended_at: number | null;
  metadata: string;
  callback_url: string | null;
  version: number;
}

interface PaymentRow {
  txid: string;
  vout: number;
  invoice_id: string;
  amount_sats: number;
  status: Payment['status'];
  block_hash: string | null;
  block_height: number | null;
  confirmations: number;
  first_seen_at: number;
  replaced_at: number | null;
  coinbase: 0 | 1;
}


/** watch_until of an invoice watched for as long as its state needs (watchUntil() is null). */
export const WATCH_WHILE_NEEDED = Number.MAX_SAFE_INTEGER;

/** An invoice as stored: the domain record plus where its address came from. */
export interface StoredInvoice extends Invoice {
  /** SQLite rowid: the chain watcher's compact handle for the invoice. */
  rowid: number;
  xpubId: string;
  addressIndex: number;
  scriptHex: string;
  version: number;
}

const toPayment = (r: PaymentRow): Payment => ({
  txid: r.txid,
  vout: r.vout,
  amountSats: r.amount_sats,
  status: r.status,
  confirmations: r.confirmations,
  blockHeight: r.block_height,
  blockHash: r.block_hash,
  coinbase: r.coinbase === 1,
  firstSeenAt: r.first_seen_at,
  ...(r.status === 'replaced' ? { replacedAt: r.replaced_at } : {}),
});

function toInvoice(r: InvoiceRow, payments: Payment[]): StoredInvoice {
  return {
    id: r.id,
    storeId: r.store_id,
    livemode: r.livemode === 1,
    status: r.status,
    amountSats: r.amount_sats,
    fiat:
      r.fiat_amount_cents === null
        ? null
        : {
            amountCents: r.fiat_amount_cents,
            currency: 'USD',
            rateCentsPerBtc: r.rate_cents_per_btc!,
            rateSource: r.rate_source!,
            rateFetchedAt: r.rate_fetched_at!,
          },
    address: r.address,
    confirmationsRequired: r.confirmations_required,
    lateWindowMs: r.late_window_ms,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    paidAt: r.paid_at,
    cancelledAt: r.cancelled_at,
    expiredAt: r.expired_at,
    ...(r.wait_ended_at !== null ? { waitEndedAt: r.wait_ended_at } : {}),
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    callbackUrl: r.callback_url,
    payments,
    rowid: r.rowid,
    xpubId: r.xpub_id,
    addressIndex: r.address_index,
    scriptHex: r.script_hex,
    version: r.version,
  };
}

export interface ListQuery {
  storeId: string;
  livemode: boolean;
  limit: number;
  /** Newest first; page after (older than) this id, or before (newer than) it. */
  startingAfter?: string;
  endingBefore?: string;
  status?: InvoiceStatus;
  createdGte?: number;
  createdLte?: number;
}

/** The highest invoice rowid whose entry is in invoice_list: the invoices above it are the unlisted tail (migration 0016). */
const LISTED_THROUGH = "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'invoices_listed_through'), 0)";

/**
 * The ids of one store's invoices, as arms of a UNION ALL to be ordered by
 * id: one range of invoice_list per mode and status (each already in id
 * order) and the invoices not listed yet (a few hundred at most, read by
 * rowid and sorted). `conditions` name columns both tables have (store_id,
 * id, created_at); `invoiceConditions` the invoices' own, read for each list
 * entry. Every arm takes the conditions' parameters, in their order.
 */
function storeIdArms(conditions: string[], modes: string[], statuses: string[], invoiceConditions: string[] = []): string {
  const ofInvoice = invoiceConditions.length > 0 ? [`EXISTS (SELECT 1 FROM invoices WHERE invoices.id = invoice_list.id AND ${invoiceConditions.join(' AND ')})`] : [];
  const listed = modes.flatMap((mode) =>
    statuses.map((status) => `SELECT id FROM invoice_list WHERE ${[...conditions, ...ofInvoice, `livemode = ${mode}`, `status = ${status}`].join(' AND ')}`),
  );
  const mode = modes.length === 1 ? [`livemode = ${modes[0]}`] : [];
  const status = statuses.length === 1 ? [`status = ${statuses[0]}`] : [];
  const unlisted = `SELECT id FROM invoices NOT INDEXED WHERE ${[`rowid > ${LISTED_THROUGH}`, ...conditions, ...invoiceConditions, ...mode, ...status].join(' AND ')}`;
  return [...listed, unlisted].join(' UNION ALL ');
}

/**
 * The SQL of a list page of this shape, its values as named parameters
 * (@storeId, @livemode, @limit and those of the filters given): ids only,
 * newest first, or oldest first for ending_before alone. invoice_list's key,
 * (store, mode, status, id), serves every shape: without a status filter
 * SQLite merges one range of it per status in id order and stops at the
 * limit, and the table holds created_at, so no invoice is read.
 */
export function listInvoicesSql(q: ListQuery): string {
  const where = ['store_id = @storeId'];
  if (q.createdGte !== undefined) where.push('created_at >= @createdGte');
  if (q.createdLte !== undefined) where.push('created_at <= @createdLte');
  if (q.startingAfter) where.push('id < @startingAfter');
  if (q.endingBefore) where.push('id > @endingBefore');
  const reverse = Boolean(q.endingBefore) && !q.startingAfter;
  const statuses = q.status ? ['@status'] : INVOICE_STATUSES.map((s) => `'${s}'`);
  return `${storeIdArms(where, ['@livemode'], statuses)} ORDER BY id ${reverse ? 'ASC' : 'DESC'} LIMIT @limit`;
}

/** What an operator looks invoices up by (`till invoices find`): a payment's txid, an address or a metadata pair, and a store. */
export interface InvoiceLookup {
  txid?: string;
  address?: string;
  metadata?: { key: string; value: string };
  storeId?: string;
  limit: number;
}

export type InvoicesRepo = ReturnType<typeof createInvoicesRepo>;

export function createInvoicesRepo(db: Db) {
  const byId = db.prepare<[string], InvoiceRow>('SELECT rowid, * FROM invoices WHERE id = ?');
  const byRowid = db.prepare<[number], InvoiceRow>('SELECT rowid, * FROM invoices WHERE rowid = ?');
  const listed = db.prepare<[string, string, number], number>('SELECT 1 FROM invoices WHERE id = ? AND store_id = ? AND livemode = ?').pluck();
  // Raw rows (arrays): the start-up rebuild steps through a million of them.
  const watched = db
    .prepare<[number], [number, string]>('SELECT rowid, script_hex FROM invoices WHERE watch_until > ?')
    .raw(true);
  const versions = db.prepare<[string], { id: string; version: number }>(
    'SELECT i.id, i.version FROM invoices i JOIN json_each(?) j ON i.id = j.value',
  );
  const countWatched = db
    .prepare<[number], number>('SELECT COUNT(*) FROM invoices WHERE watch_until > ?')
    .pluck();
  const watchedAddresses = db.prepare<[number], { address: string }>(
    'SELECT address FROM invoices WHERE watch_until > ?',
  );
  const unwatchedSince = db.prepare<[number, number], { rowid: number; script_hex: string }>(
    'SELECT rowid, script_hex FROM invoices WHERE watch_until > ? AND watch_until <= ?',
  );
  const withPaymentsAbove = db.prepare<[number, number], InvoiceRow>(
    `SELECT rowid, * FROM invoices WHERE id IN (SELECT invoice_id FROM payments WHERE block_height >= ?
       UNION SELECT invoice_id FROM payments WHERE coinbase = 1 AND block_height >= ?)`,
  );
  const finishedWatchedWhileNeeded = db.prepare<[number], InvoiceRow>(
    "SELECT rowid, * FROM invoices WHERE watch_until = ? AND status <> 'pending'",
  );
  const finishedWithReplacedSince = db.prepare<[number], InvoiceRow>(
    "SELECT rowid, * FROM invoices WHERE status <> 'pending' AND id IN (SELECT invoice_id FROM payments WHERE status = 'replaced' AND replaced_at > ?)",
  );
  const withMempoolPayments = db.prepare<[], InvoiceRow>(
    "SELECT rowid, * FROM invoices WHERE id IN (SELECT invoice_id FROM payments WHERE status = 'mempool')",
  );
  const withCountingPaymentsOf = db.prepare<[string], InvoiceRow>(
    "SELECT rowid, * FROM invoices WHERE id IN (SELECT invoice_id FROM payments WHERE txid IN (SELECT value FROM json_each(?)) AND status <> 'replaced')",
  );
  const withBlockPayments = db.prepare<[string], InvoiceRow>(
    'SELECT rowid, * FROM invoices WHERE id IN (SELECT invoice_id FROM payments WHERE block_hash = ?)',
  );
  const touch = db.prepare<[number, string]>('UPDATE invoices SET version = version + 1, watch_until = ? WHERE id = ?');
  const refreshConfirmations = db.prepare<[number, number]>(
    "UPDATE payments SET confirmations = ? - block_height + 1 WHERE status = 'confirmed' AND block_height >= ?",
  );
  const paymentsOf = db.prepare<[string], PaymentRow>('SELECT * FROM payments WHERE invoice_id = ? ORDER BY first_seen_at, txid, vout');
  // Bound by position, in the order of `insert` below: by name, better-sqlite3 makes a string of each of the
  // 20 names on every call (~2 µs a creation, docs/PERFORMANCE.md, twenty-ninth round).
  const insert = db.prepare(
    `INSERT INTO invoices (id, store_id, livemode, status, amount_sats, fiat_amount_cents, currency, rate_cents_per_btc, rate_source,
       rate_fetched_at, xpub_id, address_index, address, script_hex, confirmations_required, late_window_ms, expires_at, created_at,
       metadata, callback_url, watch_until)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${WATCH_WHILE_NEEDED})`,
  );
  const updateState = db.prepare(
    `UPDATE invoices SET status = @status, expires_at = @expiresAt, paid_at = @paidAt, cancelled_at = @cancelledAt, expired_at = @expiredAt,
       wait_ended_at = @waitEndedAt, watch_until = @watchUntil, version = version + 1
     WHERE id = @id`,
  );
  const upsertPayment = db.prepare(
    `INSERT INTO payments (txid, vout, invoice_id, amount_sats, status, block_hash, block_height, confirmations, first_seen_at, replaced_at, coinbase)
     VALUES (@txid, @vout, @invoiceId, @amountSats, @status, @blockHash, @blockHeight, @confirmations, @firstSeenAt, @replacedAt, @coinbase)
     ON CONFLICT (txid, vout) DO UPDATE SET status = excluded.status, block_hash = excluded.block_hash,
       block_height = excluded.block_height, confirmations = excluded.confirmations,
       first_seen_at = MIN(first_seen_at, excluded.first_seen_at), replaced_at = excluded.replaced_at, coinbase = excluded.coinbase`,
  );
  const deletePayment = db.prepare<[string, number]>('DELETE FROM payments WHERE txid = ? AND vout = ?');
  const duePending = db.prepare<[number, number, number], InvoiceRow>(
    // Skips invoices that on-time payments cover: they wait for confirmations
    // (the chain decides them), and must not crowd out the ones that can expire.
    `SELECT rowid, * FROM invoices i WHERE status = 'pending' AND expires_at <= ? AND livemode <= ?
       AND COALESCE((SELECT SUM(p.amount_sats) FROM payments p
                     WHERE p.invoice_id = i.id AND p.status != 'replaced' AND p.first_seen_at < i.expires_at), 0) < i.amount_sats
     ORDER BY expires_at LIMIT ?`,
  );

  // A lost mark (its meta row deleted by hand) makes every invoice the tail, so lists show the listed ones twice
  // until this next runs (the server's loop: within 50 ms): the entries already listed are skipped, the rest
  // listed, and the mark set again. Guarding every list query against it cost ~3 µs an arm.
  const listNew = db.prepare(
    `INSERT OR IGNORE INTO invoice_list (store_id, livemode, status, id, created_at)
       SELECT store_id, livemode, status, id, created_at FROM invoices WHERE rowid > ${LISTED_THROUGH}
       ORDER BY store_id, livemode, status, id`,
  );
  const markListed = db.prepare(
    `INSERT INTO meta (key, value)
       SELECT 'invoices_listed_through', CAST(rowid AS TEXT) FROM invoices WHERE rowid > ${LISTED_THROUGH} ORDER BY rowid DESC LIMIT 1
       ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
  );
  const hasUnlisted = db.prepare<[], number>(`SELECT EXISTS (SELECT 1 FROM invoices WHERE rowid > ${LISTED_THROUGH})`).pluck();

  const paymentsOfMany = db.prepare<[string], PaymentRow>(
    'SELECT * FROM payments WHERE invoice_id IN (SELECT value FROM json_each(?)) ORDER BY invoice_id, first_seen_at, txid, vout',
  );

  function load(row: InvoiceRow | undefined): StoredInvoice | null {
    return row ? toInvoice(row, paymentsOf.all(row.id).map(toPayment)) : null;
  }

  /** Several invoices with their payments in two queries, not one per invoice. */
  function loadMany(rows: InvoiceRow[]): StoredInvoice[] {
    if (rows.length === 0) return [];
    const byInvoice = new Map<string, Payment[]>();
    for (const p of paymentsOfMany.all(JSON.stringify(rows.map((r) => r.id)))) {
      getOrInsert(byInvoice, p.invoice_id, () => []).push(toPayment(p));
    }
    return rows.map((r) => toInvoice(r, byInvoice.get(r.id) ?? []));
  }

  const byIds = db.prepare<[string], InvoiceRow>('SELECT rowid, * FROM invoices WHERE id IN (SELECT value FROM json_each(?))');

  const listCache = new Map<string, ReturnType<typeof db.prepare<unknown[], string>>>();
  function listStatement(q: ListQuery) {
    const sql = listInvoicesSql(q);
    let stmt = listCache.get(sql);
    if (!stmt) {
      stmt = db.prepare<unknown[], string>(sql).pluck();
      listCache.set(sql, stmt);
    }
    return stmt;
  }

  return {
    get(id: string): StoredInvoice | null {
      return load(byId.get(id));
    },
    /** Whether a list of this store and mode holds the invoice (a list cursor must name one). */
    isListed(id: string, storeId: string, livemode: boolean): boolean {
      return listed.get(id, storeId, livemode ? 1 : 0) !== undefined;
    },
    getByRowid(rowid: number): StoredInvoice | null {
      return load(byRowid.get(rowid));
    },
    /**
     * Invoices matching every part of the lookup, newest first. A txid is an
     * index read; an address or a metadata pair reads the store's invoices
     * (every invoice without a store; no index on the address: migration
     * 0013): for an operator's command, not a request.
     */
    find(q: InvoiceLookup): StoredInvoice[] {
      const where: string[] = [];
      const params: unknown[] = [];
      if (q.txid !== undefined) (where.push('id IN (SELECT invoice_id FROM payments WHERE txid = ?)'), params.push(q.txid));
      if (q.address !== undefined) (where.push('address = ?'), params.push(q.address));
      if (q.metadata !== undefined) (where.push('EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND value = ?)'), params.push(q.metadata.key, q.metadata.value));
      if (q.storeId !== undefined && q.txid === undefined && q.address === undefined) {
        // A store's newest without sorting its every invoice: one range of invoice_list per mode and status and
        // the invoices not listed yet, merged in id order up to the limit (as listInvoicesSql does for one mode).
        const arms = storeIdArms(['store_id = ?'], ['0', '1'], INVOICE_STATUSES.map((s) => `'${s}'`), where);
        const armParams = Array.from({ length: 2 * INVOICE_STATUSES.length + 1 }, () => [q.storeId, ...params]).flat();
        const sql = `SELECT rowid, * FROM invoices WHERE id IN (${arms} ORDER BY id DESC LIMIT ?) ORDER BY id DESC`;
        return loadMany(db.prepare<unknown[], InvoiceRow>(sql).all(...armParams, q.limit));
      }
      if (q.storeId !== undefined) (where.push('store_id = ?'), params.push(q.storeId));
      const sql = `SELECT rowid, * FROM invoices ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
      return loadMany(db.prepare<unknown[], InvoiceRow>(sql).all(...params, q.limit));
    },
    countWatched(now: number): number {
      return countWatched.get(now)!;
    },
    /** [rowid, output script hex] of every invoice whose address must be watched at this time. */
    iterateWatched(now: number): IterableIterator<[number, string]> {
      return watched.iterate(now);
    },
    /** The current version of each of these invoices. */
    versionsOf(ids: string[]): Array<{ id: string; version: number }> {
      return versions.all(JSON.stringify(ids));
    },
    listWatchedAddresses(now: number): string[] {
      return watchedAddresses.all(now).map((r) => r.address);
    },
    /** Invoices whose watch ended in (from, to]. */
    listUnwatchedBetween(from: number, to: number): Array<{ rowid: number; scriptHex: string }> {
      return unwatchedSince.all(from, to).map((r) => ({ rowid: r.rowid, scriptHex: r.script_hex }));
    },
    /** Invoices with a payment mined from `height` up, or a coinbase payment mined from `coinbaseHeight` up. */
    listWithPaymentsFromHeight(height: number, coinbaseHeight: number): StoredInvoice[] {
      return loadMany(withPaymentsAbove.all(height, coinbaseHeight));
    },
    /** Invoices past pending still watched while needed (see chain-payments settleWatchEnds). */
    listFinishedWatchedWhileNeeded(): StoredInvoice[] {
      return loadMany(finishedWatchedWhileNeeded.all(WATCH_WHILE_NEEDED));
    },
    /** Finished invoices with a payment replaced after `since` (one pass over the payments: for a one-time fix). */
    listFinishedWithReplacedSince(since: number): StoredInvoice[] {
      return loadMany(finishedWithReplacedSince.all(since));
    },
    listWithMempoolPayments(): StoredInvoice[] {
      return loadMany(withMempoolPayments.all());
    },
    /** The invoices with a payment that counts (unconfirmed or confirmed) in one of these transactions. */
    listWithCountingPaymentsOf(txids: readonly string[]): StoredInvoice[] {
      return loadMany(withCountingPaymentsOf.all(JSON.stringify(txids)));
    },
    listWithPaymentsInBlock(hash: string): StoredInvoice[] {
      return loadMany(withBlockPayments.all(hash));
    },
    /** A new version with nothing but the watch horizon changed (confirmation counts moved). */
    touch(id: string, watchUntil: number | null): void {
      touch.run(watchUntil ?? WATCH_WHILE_NEEDED, id);
    },
    /** Confirmation counts, as of `tip`, of payments mined from `fromHeight` up. */
    refreshConfirmations(tip: number, fromHeight: number): void {
      refreshConfirmations.run(tip, fromHeight);
    },
    /** Writes a new invoice; returns its rowid. */
    insert(inv: Omit<StoredInvoice, 'rowid'>): number {
      const { fiat } = inv;
      return Number(insert.run([
        inv.id, inv.storeId, inv.livemode ? 1 : 0, inv.status, inv.amountSats,
        fiat?.amountCents ?? null, fiat?.currency ?? null, fiat?.rateCentsPerBtc ?? null, fiat?.rateSource ?? null, fiat?.rateFetchedAt ?? null,
        inv.xpubId, inv.addressIndex, inv.address, inv.scriptHex, inv.confirmationsRequired, inv.lateWindowMs, inv.expiresAt, inv.createdAt,
        JSON.stringify(inv.metadata), inv.callbackUrl,
      ]).lastInsertRowid);
    },
    /** Writes the state fields and the payment list of an invoice after a transition. */
    saveTransition(before: StoredInvoice, after: Invoice): void {
      updateState.run({ ...after, waitEndedAt: after.waitEndedAt ?? null, watchUntil: watchUntil(after) ?? WATCH_WHILE_NEEDED });
      const kept = new Set(after.payments.map(outpointKey));
      for (const p of before.payments) if (!kept.has(outpointKey(p))) deletePayment.run(p.txid, p.vout);
      for (const p of after.payments) {
        upsertPayment.run({ ...p, invoiceId: after.id, blockHash: p.blockHash ?? null, replacedAt: p.replacedAt ?? null, coinbase: p.coinbase ? 1 : 0 });
      }
    },
    /** These invoices with their payments, in no particular order; unknown ids are left out. */
    getMany(ids: string[]): StoredInvoice[] {
      return ids.length === 0 ? [] : loadMany(byIds.all(JSON.stringify(ids)));
    },
    /** Ids of a list page (limit + 1 of them, to tell whether there are more), newest first or, for ending_before, oldest first. */
    listIds(q: ListQuery): string[] {
      // Named parameters: the query's own fields; those its SQL does not name are not read.
      return listStatement(q).all({ ...q, livemode: q.livemode ? 1 : 0, limit: q.limit + 1 });
    },
    /** Whether invoices were created since the last listNew. */
    hasUnlisted(): boolean {
      return hasUnlisted.get() === 1;
    },
    /**
     * Lists the invoices created since the last call: copies them into
     * invoice_list in key order, each store's as one run, and moves the mark.
     * Run inside a write transaction. Returns how many were listed.
     */
    listNew(): number {
      const listed = listNew.run().changes;
      markListed.run();
      return listed;
    },
    /** Pending invoices whose time is up; live ones only when includeLive. */
    duePending(now: number, limit: number, includeLive: boolean): StoredInvoice[] {
      return loadMany(duePending.all(now, includeLive ? 1 : 0, limit));
    },
  };
}
