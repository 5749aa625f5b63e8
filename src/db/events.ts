import type { Db } from './connection.ts';

export interface EventRecord {
  seq: number;
  id: string;
  type: string;
  storeId: string;
  invoiceId: string | null;
  livemode: boolean;
  createdAt: number;
  /** The webhook body, fixed when the event is written. */
  body: string;
}

interface Row {
  seq: number;
  id: string;
  type: string;
  store_id: string;
  invoice_id: string | null;
  livemode: number;
  created_at: number;
  body: string;
}

const toRecord = (r: Row): EventRecord => ({
  seq: r.seq,
  id: r.id,
  type: r.type,
  storeId: r.store_id,
  invoiceId: r.invoice_id,
  livemode: r.livemode === 1,
  createdAt: r.created_at,
  body: r.body,
});

export type EventsRepo = ReturnType<typeof createEventsRepo>;

export function createEventsRepo(db: Db) {
  const insert = db.prepare(
    'INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body) VALUES (@id, @type, @storeId, @invoiceId, @livemode, @createdAt, @body)',
  );
  const ofInvoice = db.prepare<[string], Row>('SELECT * FROM events WHERE invoice_id = ? ORDER BY seq');
  const kindsOf = db.prepare<[string], { id: string; type: string; invoice_id: string | null }>('SELECT id, type, invoice_id FROM events WHERE id IN (SELECT value FROM json_each(?))');
  const oldestAfter = db.prepare<[number, number], { seq: number; id: string; created_at: number; dispatched: number }>(
    'SELECT seq, id, created_at, dispatched FROM events WHERE seq > ? ORDER BY seq LIMIT ?',
  );
  const deleteBySeq = db.prepare<[number]>('DELETE FROM events WHERE seq = ?');
  const undispatched = db.prepare<[number], Row & { callback_url: string | null }>(
    `SELECT e.*, i.callback_url FROM events e LEFT JOIN invoices i ON i.id = e.invoice_id
     WHERE e.dispatched = 0 ORDER BY e.seq LIMIT ?`,
  );
  const anyUndispatched = db.prepare<[], number>('SELECT 1 FROM events WHERE dispatched = 0 LIMIT 1').pluck();
  const markDispatched = db.prepare<[number]>('UPDATE events SET dispatched = 1 WHERE seq = ?');
  // Bound by position (every creation writes one; see the invoices' insert).
  const insertDispatched = db.prepare(
    'INSERT INTO events (id, type, store_id, invoice_id, livemode, created_at, body, dispatched) VALUES (?, ?, ?, ?, ?, ?, ?, 1)',
  );
  return {
    insert(e: Omit<EventRecord, 'seq'>): void {
      insert.run({ ...e, livemode: e.livemode ? 1 : 0 });
    },
    listForInvoice(invoiceId: string): EventRecord[] {
      return ofInvoice.all(invoiceId).map(toRecord);
    },
    /** The type and invoice of each of these events, without their bodies: for listings. */
    kindsOf(ids: readonly string[]): Map<string, { type: string; invoiceId: string | null }> {
      return new Map(kindsOf.all(JSON.stringify(ids)).map((r) => [r.id, { type: r.type, invoiceId: r.invoice_id }]));
    },
    /** Events after `seq` in the order they were written, without their bodies: for pruning. */
    oldestAfter(seq: number, limit: number): Array<{ seq: number; id: string; createdAt: number; dispatched: boolean }> {
      return oldestAfter.all(seq, limit).map((r) => ({ seq: r.seq, id: r.id, createdAt: r.created_at, dispatched: r.dispatched === 1 }));
    },
    delete(seq: number): void {
      deleteBySeq.run(seq);
    },
    /** The outbox: events not yet turned into deliveries, oldest first, with their invoice's callback_url. */
    listUndispatched(limit: number): Array<EventRecord & { callbackUrl: string | null }> {
      return undispatched.all(limit).map((r) => ({ ...toRecord(r), callbackUrl: r.callback_url }));
    },
    /** A read: is there anything in the outbox at all? */
    hasUndispatched(): boolean {
      return anyUndispatched.get() !== undefined;
    },
    markDispatched(seq: number): void {
      markDispatched.run(seq);
    },
    /** An event whose deliveries the same transaction writes (or, for webhook.test, one chosen target only). */
    insertDispatched(e: Omit<EventRecord, 'seq'>): void {
      insertDispatched.run([e.id, e.type, e.storeId, e.invoiceId, e.livemode ? 1 : 0, e.createdAt, e.body]);
    },
  };
}
