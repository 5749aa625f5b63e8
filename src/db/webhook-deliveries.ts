import type { Db } from './connection.ts';
import type { Statement } from './write-queue.ts';

export type DeliveryStatus = 'attempting' | 'success' | 'failed' | 'dead_letter';

export interface DeliveryRecord {
  id: string;
  eventId: string;
  storeId: string;
  endpointId: string | null;
  target: string;
  url: string;
  status: DeliveryStatus;
  attempts: number;
  totalAttempts: number;
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  responseBody: string | null;
  createdAt: number;
  completedAt: number | null;
}

export interface AttemptRecord {
  deliveryId: string;
  n: number;
  startedAt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}

/** A due delivery: what sending it and recording the outcome need, nothing more (the worker reads thousands a second). */
export interface DueDelivery extends Pick<DeliveryRecord, 'id' | 'eventId' | 'storeId' | 'endpointId' | 'target' | 'url' | 'attempts'> {
  eventType: string;
  body: string;
}

const COLUMNS = `d.id, d.event_id AS eventId, d.store_id AS storeId, d.endpoint_id AS endpointId, d.target, d.url, d.status,
  d.attempts, d.total_attempts AS totalAttempts, d.next_attempt_at AS nextAttemptAt, d.last_attempt_at AS lastAttemptAt,
  d.last_status_code AS lastStatusCode, d.last_error AS lastError, d.response_body AS responseBody, d.created_at AS createdAt,
  d.completed_at AS completedAt`;

const DUE_COLUMNS = `d.id, d.event_id AS eventId, d.store_id AS storeId, d.endpoint_id AS endpointId, d.target, d.url, d.attempts,
  e.type AS eventType, e.body`;

export interface DeliveryFilter {
  storeId?: string;
  status?: DeliveryStatus;
  /** The deliveries of one event (one an endpoint, and one to the invoice's callback_url). */
  eventId?: string;
  limit: number;
}

/** Why a delivery waiting for an endpoint became a dead letter at once (services/webhooks.ts); migration 0010's index names them too. */
export const SET_ASIDE = { disabled: 'endpoint disabled', deleted: 'endpoint deleted' } as const;

/** A dead letter because its endpoint was disabled or deleted, not because the receiver kept failing. */
export function isSetAside(d: Pick<DeliveryRecord, 'status' | 'lastError'>): boolean {
  return d.status === 'dead_letter' && (d.lastError === SET_ASIDE.disabled || d.lastError === SET_ASIDE.deleted);
}

// An attempt's outcome is written as plain statements (see statementsToFinishAttempt).
// They act while the delivery is still attempting, or when its endpoint was
// disabled or deleted while the attempt was under way (set aside once the
// worker had taken it): the attempt is history all the same, and an answered
// one means the receiver has the event. The attempt row is numbered from the
// delivery's own count, so a second outcome for the same attempt (a replay
// raced it) changes nothing.
const SET_ASIDE_DURING = `status = 'dead_letter' AND last_error IN ('${SET_ASIDE.disabled}', '${SET_ASIDE.deleted}')`;
const RECORD_ATTEMPT_SQL = `INSERT INTO webhook_attempts (delivery_id, n, started_at, duration_ms, status_code, error, response_body)
  SELECT id, total_attempts + 1, @startedAt, @durationMs, @statusCode, @error, @responseBody
  FROM webhook_deliveries WHERE id = @id AND (status = 'attempting' OR (${SET_ASIDE_DURING}))`;
const FINISH_ATTEMPT_SQL = `UPDATE webhook_deliveries SET status = @status, attempts = attempts + 1, total_attempts = total_attempts + 1,
    next_attempt_at = @nextAttemptAt, last_attempt_at = @lastAttemptAt, last_status_code = @lastStatusCode,
    last_error = @lastError, response_body = @responseBody, completed_at = @completedAt
  WHERE id = @id AND status = 'attempting'`;
// Set aside while on the wire: delivered if the receiver took it, else it stays
// the dead letter it became, still saying why.
const FINISH_SET_ASIDE_ATTEMPT_SQL = `UPDATE webhook_deliveries SET total_attempts = total_attempts + 1,
    last_attempt_at = @lastAttemptAt, last_status_code = @lastStatusCode, response_body = @responseBody,
    status = CASE WHEN @status = 'success' THEN 'success' ELSE status END,
    last_error = CASE WHEN @status = 'success' THEN NULL ELSE last_error END,
    completed_at = CASE WHEN @status = 'success' THEN @completedAt ELSE completed_at END
  WHERE id = @id AND ${SET_ASIDE_DURING}`;
// Nothing was sent (its endpoint disabled or deleted since the delivery was
// read): no attempt to record. A row still attempting is set aside as its
// endpoint's others were; one set aside already stays as it is.
const SET_ASIDE_UNSENT_SQL = `UPDATE webhook_deliveries SET status = 'dead_letter', next_attempt_at = NULL, completed_at = @now, last_error = @why
  WHERE id = @id AND status = 'attempting'`;

export type WebhookDeliveriesRepo = ReturnType<typeof createWebhookDeliveriesRepo>;

export function createWebhookDeliveriesRepo(db: Db) {
  const insert = db.prepare(
    `INSERT OR IGNORE INTO webhook_deliveries (id, event_id, store_id, endpoint_id, target, url, status, next_attempt_at, created_at)
     VALUES (@id, @eventId, @storeId, @endpointId, @target, @url, 'attempting', @nextAttemptAt, @createdAt)`,
  );
  const byId = db.prepare<[string], DeliveryRecord>(`SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.id = ?`);
  // Skips from target to target along the (target, next_attempt_at) index and
  // takes each one's earliest due delivery not under way: a few seeks a target.
  // Walking the due range instead (DISTINCT over it) cost a read of every due
  // row, ~16 ms at 50,000 (a slow receiver's backlog), once a second.
  const dueTargets = db.prepare<[{ skip: string; now: number; limit: number }], { target: string }>(
    `WITH RECURSIVE targets(target) AS (
       SELECT MIN(target) FROM webhook_deliveries WHERE status = 'attempting'
       UNION ALL
       SELECT (SELECT MIN(target) FROM webhook_deliveries WHERE status = 'attempting' AND target > targets.target)
         FROM targets WHERE targets.target IS NOT NULL
     )
     SELECT target FROM (
       SELECT t.target, (SELECT d.next_attempt_at FROM webhook_deliveries d
                         WHERE d.status = 'attempting' AND d.target = t.target AND d.next_attempt_at <= @now
                           AND d.id NOT IN (SELECT value FROM json_each(@skip))
                         ORDER BY d.next_attempt_at LIMIT 1) AS due
       FROM targets t WHERE t.target IS NOT NULL
     ) WHERE due IS NOT NULL ORDER BY due LIMIT @limit`,
  );
  const dueForTarget = db.prepare<[string, number, string, number], DueDelivery>(
    `SELECT ${DUE_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
     WHERE d.status = 'attempting' AND d.target = ? AND d.next_attempt_at <= ?
       AND d.id NOT IN (SELECT value FROM json_each(?)) ORDER BY d.next_attempt_at LIMIT ?`,
  );
  const attemptingById = db.prepare<[string], DueDelivery>(
    `SELECT ${DUE_COLUMNS} FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
     WHERE d.id = ? AND d.status = 'attempting'`,
  );
  // Why it was set aside goes (its endpoint takes deliveries again): its last error is again its last attempt's, if any
  // (a connection refused, a timeout), as its status code is.
  const replay = db.prepare<[number, string]>(
    `UPDATE webhook_deliveries SET status = 'attempting', attempts = 0, next_attempt_at = ?, completed_at = NULL,
       last_error = CASE WHEN last_error IN ('${SET_ASIDE.disabled}', '${SET_ASIDE.deleted}')
         THEN (SELECT a.error FROM webhook_attempts a WHERE a.delivery_id = webhook_deliveries.id ORDER BY a.n DESC LIMIT 1)
         ELSE last_error END
     WHERE id = ? AND status IN ('dead_letter', 'failed')`,
  );
  const readdress = db.prepare<[string, string, string]>(
    `UPDATE webhook_deliveries SET url = ? WHERE store_id = ? AND status IN ('attempting', 'dead_letter', 'failed') AND endpoint_id = ?`,
  );
  const setAside = db.prepare<{ endpointId: string; now: number; why: string }>(
    `UPDATE webhook_deliveries SET status = 'dead_letter', next_attempt_at = NULL, completed_at = @now, last_error = @why
     WHERE endpoint_id = @endpointId AND status = 'attempting'`,
  );
  const attemptsOf = db.prepare<[string], AttemptRecord>(
    `SELECT delivery_id AS deliveryId, n, started_at AS startedAt, duration_ms AS durationMs, status_code AS statusCode,
       error, response_body AS responseBody FROM webhook_attempts WHERE delivery_id = ? ORDER BY n`,
  );
  // Counted up to a cap from an index each (/healthz asks, with no key, on the event loop): the due one holds
  // every delivery still attempted; the given-up one (migration 0010) those that gave up, with their time.
  const attemptingCount = db.prepare<[number], number>(
    "SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'attempting' LIMIT ?)",
  ).pluck();
  const givenUpCount = db.prepare<[DeliveryStatus, number, number], number>(
    `SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries
       WHERE status IN ('failed', 'dead_letter') AND (last_error IS NULL OR last_error NOT IN ('${SET_ASIDE.disabled}', '${SET_ASIDE.deleted}'))
         AND status = ? AND completed_at >= ? LIMIT ?)`,
  ).pluck();

  const unfinishedOfEvent = db.prepare<[string, number], number>(
    "SELECT 1 FROM webhook_deliveries WHERE event_id = ? AND (status != 'success' OR completed_at >= ?) LIMIT 1",
  ).pluck();
  const deleteAttemptsOfEvent = db.prepare<[string]>(
    'DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ?)',
  );
  const deleteOfEvent = db.prepare<[string]>('DELETE FROM webhook_deliveries WHERE event_id = ?');

  return {
    /** Inserts a delivery unless one exists for the same event and target. */
    insert(d: Pick<DeliveryRecord, 'id' | 'eventId' | 'storeId' | 'endpointId' | 'target' | 'url' | 'nextAttemptAt' | 'createdAt'>): boolean {
      return insert.run(d).changes === 1;
    },
    get(id: string): DeliveryRecord | null {
      return byId.get(id) ?? null;
    },
    /**
     * Receivers (targets) that have deliveries due now, but for those in `skip` (being attempted already: a target
     * whose due deliveries are all under way has nothing to start), the longest due first; bounded.
     */
    dueTargets(now: number, limit: number, skip: Iterable<string> = []): string[] {
      return dueTargets.all({ skip: JSON.stringify([...skip]), now, limit }).map((r) => r.target);
    },
    /** The target's due deliveries, but for those in `skip` (being attempted already). */
    dueForTarget(target: string, now: number, limit: number, skip: Iterable<string> = []): DueDelivery[] {
      return dueForTarget.all(target, now, JSON.stringify([...skip]), limit);
    },
    /** The delivery with what sending it needs, if it is still attempting. */
    getAttempting(id: string): DueDelivery | null {
      return attemptingById.get(id) ?? null;
    },
    /**
     * The write that records one attempt and the delivery's new state, as
     * statements (run with WriteQueue.runStatements: the db thread can commit
     * it). Both change nothing if the delivery was no longer attempting.
     */
    statementsToFinishAttempt(
      id: string,
      a: Omit<AttemptRecord, 'deliveryId' | 'n'>,
      next: { status: DeliveryStatus; nextAttemptAt: number | null; completedAt: number | null },
    ): Statement[] {
      return [
        { sql: RECORD_ATTEMPT_SQL, params: { id, ...a } },
        {
          sql: FINISH_SET_ASIDE_ATTEMPT_SQL,
          params: { id, status: next.status, completedAt: next.completedAt, lastAttemptAt: a.startedAt, lastStatusCode: a.statusCode, responseBody: a.responseBody },
        },
        {
          sql: FINISH_ATTEMPT_SQL,
          params: { id, ...next, lastAttemptAt: a.startedAt, lastStatusCode: a.statusCode, lastError: a.error, responseBody: a.responseBody },
        },
      ];
    },
    /** A delivery not sent, its endpoint disabled or deleted since it was read: set aside, with no attempt recorded. */
    statementsToSetAsideUnsent(id: string, now: number, why: string): Statement[] {
      return [{ sql: SET_ASIDE_UNSENT_SQL, params: { id, now, why } }];
    },
    /** The endpoint was disabled or deleted: what waits for it becomes a dead letter now (an attempt under way still records its outcome). */
    setAside(endpointId: string, now: number, why: string): number {
      return setAside.run({ endpointId, now, why }).changes;
    },
    /** The endpoint moved to `url`: its deliveries not yet delivered (retries, dead letters, failures to replay) go there too. */
    readdress(endpoint: { id: string; storeId: string }, url: string): number {
      return readdress.run(url, endpoint.storeId, endpoint.id).changes;
    },
    replay(id: string, now: number): boolean {
      return replay.run(now, id).changes === 1;
    },
    attempts(id: string): AttemptRecord[] {
      return attemptsOf.all(id);
    },
    list(f: DeliveryFilter): DeliveryRecord[] {
      const where: string[] = [];
      const params: unknown[] = [];
      if (f.storeId) (where.push('d.store_id = ?'), params.push(f.storeId));
      if (f.status) (where.push('d.status = ?'), params.push(f.status));
      if (f.eventId) (where.push('d.event_id = ?'), params.push(f.eventId));
      const sql = `SELECT ${COLUMNS} FROM webhook_deliveries d ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY d.id DESC LIMIT ?`;
      return db.prepare<unknown[], DeliveryRecord>(sql).all(...params, f.limit);
    },
    /** Whether the event has a delivery not yet delivered, or delivered at or after `before`. */
    keepsEvent(eventId: string, before: number): boolean {
      return unfinishedOfEvent.get(eventId, before) !== undefined;
    },
    /** Deletes the event's deliveries and their attempts; says how many of each. */
    deleteOfEvent(eventId: string): { deliveries: number; attempts: number } {
      const attempts = deleteAttemptsOfEvent.run(eventId).changes;
      return { deliveries: deleteOfEvent.run(eventId).changes, attempts };
    },
    /**
     * Deliveries still attempted, and those that gave up since `since` (refused for good by the receiver: failed;
     * every attempt failed: dead letters) but for those set aside with their endpoint; each counted up to `cap`.
     */
    countUndelivered(since: number, cap: number): { attempting: number; failed: number; deadLetter: number } {
      return { attempting: attemptingCount.get(cap)!, failed: givenUpCount.get('failed', since, cap)!, deadLetter: givenUpCount.get('dead_letter', since, cap)! };
    },
  };
}
