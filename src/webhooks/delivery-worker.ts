import { setTimeout as sleep } from 'node:timers/promises';
import type { SendingSecrets } from '../db/webhook-endpoints.ts';
import { SET_ASIDE, type DueDelivery } from '../db/webhook-deliveries.ts';
import type { Statement } from '../db/write-queue.ts';
import { createLineLogger, type LineFields, type Logger } from '../log.ts';
import type { Context } from '../services/context.ts';
import { dispatchEvents } from './dispatcher.ts';
import { ATTEMPT_TIMEOUT_MS, classifyOutcome, nextAttemptAt } from './schedule.ts';
import { validSecrets } from './secrets.ts';
import { sendWebhook, type SendResult } from './send.ts';
import { signPayload } from './signature.ts';
import { getOrInsert } from '../get-or-insert.ts';

export const USER_AGENT = 'Service-Webhook/1.0';
/** The attempt's error when the signing secret cannot be opened (a data dir restored without its secret.key). */
export const UNREADABLE_SECRET = 'the signing secret cannot be read with this data directory\'s secret.key: replace it (till webhooks rotate --unreadable replaces every such secret)';
/** How long an attempt's outcome may wait for others to share its commit. */
const OUTCOME_COMMIT_WAIT_MS = 5;
/** A failed outcome commit is tried again after 1 s, doubling up to 30 s. */
const OUTCOME_RETRY_FIRST_MS = 1000;
const OUTCOME_RETRY_MAX_MS = 30_000;
/** Due deliveries read ahead per target, in multiples of maxPerTarget. */
const READ_AHEAD = 4;
/** Rows read ahead over all targets together (each holds its body): a few MiB at most. */
const READ_AHEAD_MAX_ROWS = 1024;

/** Where a URL's requests go, as the HTTP client pools them; a URL that does not parse is its own (its attempt fails). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** Where an attempt goes: the endpoint's URL now (one changed since the delivery was written, or read ahead, takes its retries and replays), else the delivery's. */
function targetUrl(d: DueDelivery, sealed: SendingSecrets | null): string {
  return sealed?.url ?? d.url;
}

function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

export interface DeliveryWorkerOptions {
  /** Attempts waiting for an answer at once, all receivers together. */
  maxInFlight?: number;
  /** Attempts under way at once to one receiver: a slow one cannot take every slot. */
  maxPerTarget?: number;
  /** Attempts under way at once to one origin (scheme, host, port), however many endpoints share it. */
  maxPerOrigin?: number;
  timeoutMs?: number;
}

/**
 * Sends due deliveries. Due times live in SQLite (never in timers), so a
 * restart resumes the schedule where it was. Bounds: maxInFlight overall,
 * maxPerTarget per receiver, so one slow endpoint never holds up the others,
 * and its own later events still go out beside its hanging ones, and
 * maxPerOrigin per host: an attempt waits here, never inside the HTTP
 * client, where waiting for a socket would eat its deadline. A slot a host
 * frees goes first to an endpoint that waited for it with none under way
 * there: two hanging endpoints filling a host's bound would otherwise keep the
 * healthy ones on that host waiting for their whole backlog.
 */
export class DeliveryWorker {
  readonly #ctx: Context;
  readonly #logger: Logger;
  /** The one line per attempt (fixed fields, no secret). */
  readonly #attemptLog: (fields: LineFields) => void;
  readonly #maxInFlight: number;
  readonly #maxPerTarget: number;
  readonly #maxPerOrigin: number;
  readonly #timeoutMs: number;
  /** Attempts from their start until their outcome is committed. */
  readonly #inFlight = new Map<string, Promise<void>>();
  /**
   * Attempts waiting for an answer, in all and by target: what the bounds
   * limit. An answered attempt whose outcome waits for its commit no longer
   * counts, so a slow commit never holds back sending.
   */
  #sending = 0;
  readonly #perTarget = new Map<string, number>();
  readonly #perOrigin = new Map<string, number>();
  /** Attempts waiting for an answer by origin and target: who holds a host's slots. */
  readonly #originHolders = new Map<string, Map<string, number>>();
  /** Targets held back by their origin's bound, by origin: its freed slots go to them first. */
  readonly #originWaiting = new Map<string, Set<string>>();
  /** Ids of each target's deliveries in #inFlight: answered ones stay until their outcome commits. */
  readonly #held = new Map<string, Set<string>>();
  /**
   * Due deliveries read but not started yet, by target. Reading a target's
   * due rows costs ~150-250 µs however few they are, so they are read a few
   * bounds ahead and started from here as slots free up. Secrets are looked
   * up again at each start: a row whose endpoint was disabled or deleted since
   * it was read finds none, and is set aside unsent (#record).
   */
  readonly #readAhead = new Map<string, DueDelivery[]>();
  #readAheadRows = 0;
  /**
   * Targets with attempts under way whose last read of due rows found fewer
   * than it asked for: all there were. Their answers read no more until a
   * pump (every new event's for its targets, the 1 s timer's for all) says
   * rows may be due since: it reads them, or, when the target is too busy to
   * read, leaves that to its next answer.
   */
  readonly #drained = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #wakeScheduled = false;
  /** The scheduled wake pumps every target with due deliveries, not only those given new ones. */
  #fullWake = false;
  /** The last pump stopped at maxInFlight with targets still waiting. */
  #starved = false;
  /** Set by stop(): answers and wakes start nothing new. */
  #stopping = false;
  /** Aborted by stop(): ends the waits between tries of an outcome's commit. */
  #stopped = new AbortController();
  /** Outcomes whose commit failed and waits to be tried again: nothing new is sent meanwhile. */
  #unrecorded = 0;
  #unsubscribe: (() => void) | null = null;
  /** Unsealed secrets by sealed text: AES-GCM once per secret, not per attempt. */
  readonly #opened = new Map<string, string>();

  constructor(ctx: Context, logger: Logger, opts: DeliveryWorkerOptions = {}) {
    this.#ctx = ctx;
    this.#logger = logger;
    this.#attemptLog = createLineLogger(logger, 'webhook attempt');
    this.#maxInFlight = opts.maxInFlight ?? 256;
    this.#maxPerTarget = opts.maxPerTarget ?? 16;
    this.#maxPerOrigin = opts.maxPerOrigin ?? 32;
    this.#timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  }

  /**
   * Pumps every second, and at once when this process commits a change: that
   * pump reads only the targets given new deliveries (ctx.newDeliveries).
   */
  start(pollMs = 1000): void {
    this.#stopping = false;
    this.#stopped = new AbortController();
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.#unsubscribe = this.#ctx.feed.subscribeAll(() => this.wake(false));
    this.wake();
  }

  /** Starts nothing new; resolves once every attempt under way has its outcome committed. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#stopped.abort();
    this.#readAhead.clear();
    this.#readAheadRows = 0;
    this.#drained.clear();
    this.#originWaiting.clear();
    if (this.#timer) clearInterval(this.#timer);
    this.#unsubscribe?.();
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight.values());
  }

  /** Pumps soon: every target with due deliveries (`full`), or those given new ones; a full wake covers the others. */
  wake(full = true): void {
    if (full) this.#fullWake = true;
    if (this.#wakeScheduled || this.#stopping) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      const full = this.#fullWake;
      this.#fullWake = false;
      this.pump(full).catch((err) => this.#logger.error({ err }, 'webhook worker failed'));
    });
  }

  /**
   * Dispatches the outbox and starts the due attempts that fit the bounds:
   * of every target with due deliveries (`full`), or only of the targets
   * given new deliveries since the last pump. Returns those attempts.
   */
  async pump(full = true): Promise<Promise<void>[]> {
    // Most wakes (an attempt finished) find the outbox empty: check with a read before taking the write lock.
    while (this.#ctx.repos.events.hasUndispatched() && (await this.#ctx.writes.run(() => dispatchEvents(this.#ctx))) > 0);
    const started: Promise<void>[] = [];
    // A wake scheduled before stop(), or stop() during the dispatch: what stop() waited for is all there is.
    if (this.#stopping) return started;
    const now = this.#ctx.clock.now();
    const fresh = this.#ctx.newDeliveries.take();
    // Only a full pump knows whether targets are still left waiting for the overall bound.
    if (full) this.#starved = false;
    // Not the targets whose due rows are all under way: reading each busy target's due rows again to find nothing
    // cost ~18 reads a delivery with a few endpoints busy (PERFORMANCE.md, twenty-fifth round).
    const targets = full ? this.#ctx.repos.webhookDeliveries.dueTargets(now, 10_000, [...this.#held.values()].flatMap((ids) => [...ids])) : fresh;
    for (const target of targets) {
      this.#startDue(target, now, started, true);
      if (this.#sending >= this.#maxInFlight) {
        this.#starved = true;
        break;
      }
    }
    return started;
  }

  /**
   * Starts the target's due attempts that fit the bounds, adding them to
   * `started`: from those read ahead, reading more once the target is down to
   * half its bound, unless its last read found them all and none can be new
   * (`rowsMayBeNew` is false: an answer, not a pump).
   */
  #startDue(target: string, now: number, started: Promise<void>[], rowsMayBeNew = false): void {
    // Rows may be due that the last read did not see: whatever reads next (this pump, or an answer once
    // the target is down to half its bound) must read them.
    if (rowsMayBeNew) this.#drained.delete(target);
    if (this.#unrecorded > 0) return;
    const busy = this.#perTarget.get(target) ?? 0;
    const room = Math.min(this.#maxPerTarget - busy, this.#maxInFlight - this.#sending);
    if (room <= 0) return;
    let ahead = this.#readAhead.get(target) ?? [];
    if (ahead.length < room && busy <= this.#maxPerTarget / 2 && !this.#drained.has(target)) {
      // Read ahead only while the target's own bound is what limits it, and within the overall cap.
      const spare = room < this.#maxPerTarget - busy ? 0 : READ_AHEAD_MAX_ROWS - this.#readAheadRows;
      const limit = Math.max(room, Math.min(this.#maxPerTarget * READ_AHEAD, room + spare)) - ahead.length;
      // Deliveries already under way or read ahead are left out in SQL.
      const skip = [...(this.#held.get(target) ?? []), ...ahead.map((d) => d.id)];
      const read = this.#ctx.repos.webhookDeliveries.dueForTarget(target, now, limit, skip);
      // Kept while the target has attempts under way or rows read ahead (their last one clears it).
      if (read.length < limit && (busy > 0 || read.length > 0)) this.#drained.add(target);
      else this.#drained.delete(target);
      ahead = ahead.concat(read);
      this.#readAheadRows += read.length;
    }
    if (ahead.length === 0) return;
    const starting = ahead.splice(0, room);
    this.#readAheadRows -= starting.length;
    if (ahead.length > 0) this.#readAhead.set(target, ahead);
    else this.#readAhead.delete(target);
    for (const [i, d] of starting.entries()) {
      // deliverNow may have started one since it was read.
      if (this.#inFlight.has(d.id)) continue;
      // Secrets per delivery: stores may share a callback origin, hence a target.
      const sealed = this.#ctx.repos.webhookEndpoints.sendingSecrets(d, now);
      const origin = originOf(targetUrl(d, sealed));
      if (!this.#mayTakeOriginSlot(origin, target)) {
        // Back to the front of the read-ahead: started once the origin has room.
        const rest = starting.slice(i);
        this.#readAhead.set(target, rest.concat(this.#readAhead.get(target) ?? []));
        this.#readAheadRows += rest.length;
        getOrInsert(this.#originWaiting, origin, () => new Set()).add(target);
        return;
      }
      started.push(this.#start(d, sealed, origin));
    }
  }

  /**
   * Whether `target` may start an attempt at `origin`: within the origin's
   * bound, and, if it has attempts there already, none waits there with none.
   */
  #mayTakeOriginSlot(origin: string, target: string): boolean {
    if ((this.#perOrigin.get(origin) ?? 0) >= this.#maxPerOrigin) return false;
    return !this.#originHolders.get(origin)?.has(target) || this.#starvedAt(origin, target).length === 0;
  }

  /** The targets other than `target` waiting for `origin` with no attempt under way there. */
  #starvedAt(origin: string, target: string): string[] {
    const waiting = this.#originWaiting.get(origin);
    if (!waiting) return [];
    const holders = this.#originHolders.get(origin);
    return [...waiting].filter((t) => t !== target && !holders?.has(t));
  }

  /**
   * After an answer: first the targets that waited for this origin with no
   * attempt there get its free slots, until it is full again (from their rows
   * read ahead); then that target is refilled (from its rows read ahead, or
   * from SQL once it is down to half its bound, unless its last read found
   * them all), or, if the last pump left targets waiting for the overall
   * bound, everything is pumped once the worker is down to half of it. New
   * events pump their targets, and the 1 s timer everything, anyway.
   */
  #afterAttempt(target: string, origin: string): void {
    if (this.#stopping) return;
    const now = this.#ctx.clock.now();
    // Each leaves the line for its turn, and joins it again if held back once more. One answer frees one slot:
    // once the origin is full again the rest keep their places (trying each cost a read of its due rows: with 64
    // endpoints on one host, ~30 reads an answer).
    for (const other of this.#starvedAt(origin, target)) {
      if ((this.#perOrigin.get(origin) ?? 0) >= this.#maxPerOrigin) break;
      const waiting = this.#originWaiting.get(origin)!;
      waiting.delete(other);
      if (waiting.size === 0) this.#originWaiting.delete(origin);
      this.#startDue(other, now, []);
    }
    const originHalf = this.#originWaiting.has(origin) && (this.#perOrigin.get(origin) ?? 0) <= this.#maxPerOrigin / 2;
    if (originHalf) this.#originWaiting.delete(origin);
    if (originHalf || (this.#starved && this.#sending <= this.#maxInFlight / 2)) this.wake();
    else this.#startDue(target, now, []);
  }

  /** For tests and the CLI: pump, then wait for the attempts it started. */
  async runOnce(): Promise<number> {
    const started = await this.pump();
    await Promise.all(started);
    return started.length;
  }

  /** Attempts one delivery now if it is waiting (the endpoint test call). */
  async deliverNow(id: string): Promise<void> {
    const running = this.#inFlight.get(id);
    if (running) return running;
    // Stopped: it stays due, for the next start (as pump leaves what it finds).
    if (this.#stopping) return;
    const d = this.#ctx.repos.webhookDeliveries.getAttempting(id);
    if (!d) return;
    // A pump may have read it ahead since it was committed: started here, it must not start there again.
    this.#dropReadAhead(d.target, id);
    const sealed = this.#ctx.repos.webhookEndpoints.sendingSecrets(d, this.#ctx.clock.now());
    await this.#start(d, sealed, originOf(targetUrl(d, sealed)));
  }

  #dropReadAhead(target: string, id: string): void {
    const ahead = this.#readAhead.get(target);
    const at = ahead?.findIndex((d) => d.id === id) ?? -1;
    if (at < 0) return;
    ahead!.splice(at, 1);
    this.#readAheadRows--;
    if (ahead!.length === 0) this.#readAhead.delete(target);
  }

  /**
   * Sends, then records. The target's slot frees when the answer is in; the
   * delivery stays in #inFlight (never picked again) until its outcome commits.
   */
  #start(d: DueDelivery, sealed: SendingSecrets | null, origin: string): Promise<void> {
    this.#sending++;
    bump(this.#perTarget, d.target, 1);
    this.#holdOriginSlot(origin, d.target, 1);
    const held = getOrInsert(this.#held, d.target, () => new Set());
    held.add(d.id);
    let sending = true;
    const answered = () => {
      if (!sending) return;
      sending = false;
      this.#sending--;
      bump(this.#perTarget, d.target, -1);
      this.#holdOriginSlot(origin, d.target, -1);
      this.#afterAttempt(d.target, origin);
    };
    const p = this.#send(d, sealed)
      .then((sent) => {
        answered();
        return this.#record(d, sealed, sent);
      })
      .catch((err) => this.#logger.error({ err, delivery_id: d.id }, 'webhook attempt failed'))
      .finally(() => {
        answered();
        this.#inFlight.delete(d.id);
        held.delete(d.id);
        if (held.size === 0) {
          this.#held.delete(d.target);
          this.#drained.delete(d.target);
        }
      });
    this.#inFlight.set(d.id, p);
    return p;
  }

  /** An origin's slots taken (by) or freed: its count, and which targets hold them. */
  #holdOriginSlot(origin: string, target: string, by: number): void {
    bump(this.#perOrigin, origin, by);
    const holders = getOrInsert(this.#originHolders, origin, () => new Map());
    bump(holders, target, by);
    if (holders.size === 0) this.#originHolders.delete(origin);
  }

  #open(sealed: string): string {
    let plain = this.#opened.get(sealed);
    if (plain === undefined) {
      if (this.#opened.size >= 1024) this.#opened.clear();
      plain = this.#ctx.secrets.open(sealed);
      this.#opened.set(sealed, plain);
    }
    return plain;
  }

  /** The secrets that sign now (spec 6.3.5), or null when the current one cannot be opened. */
  #signingSecrets(sealed: SendingSecrets, now: number): string[] | null {
    let current: string;
    try {
      current = this.#open(sealed.secret);
    } catch {
      return null;
    }
    let previous: string | null = null;
    if (sealed.previous && sealed.previousExpiresAt !== null && now < sealed.previousExpiresAt) {
      try {
        previous = this.#open(sealed.previous);
      } catch {
        // Unreadable: the current secret alone signs, which every receiver switched to it checks.
      }
    }
    return validSecrets(current, previous, sealed.previousExpiresAt, now);
  }

  /** `sealed` is null when the endpoint was disabled or deleted after the event: nothing is sent then. */
  async #send(d: DueDelivery, sealed: SendingSecrets | null): Promise<{ startedAt: number; result: SendResult }> {
    const ctx = this.#ctx;
    // The delivery may come from a commit still waiting for its fdatasync: nothing leaves before it is on disk.
    const pending = ctx.writes.durable();
    if (pending) await pending;
    const startedAt = ctx.clock.now();
    let result: SendResult;
    const secrets = sealed && this.#signingSecrets(sealed, startedAt);
    if (!sealed) {
      result = { responseBody: null, error: 'endpoint disabled or deleted', timedOut: false, durationMs: 0 };
    } else if (!secrets) {
      // An attempt that fails like any other: retried on the schedule, then dead_letter, replayable once rotated.
      result = { responseBody: null, error: UNREADABLE_SECRET, timedOut: false, durationMs: 0 };
    } else {
      // Signed afresh at every attempt: a retry carrying the first attempt's t would fail the 300 s check.
      const signature = signPayload(d.body, secrets, Math.floor(startedAt / 1000));
      result = await sendWebhook({
        url: targetUrl(d, sealed),
        body: d.body,
        timeoutMs: this.#timeoutMs,
        allowPrivate: ctx.config.allowPrivateCallbacks,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'x-service-signature': signature,
          'x-service-event-id': d.eventId,
          'x-service-event-type': d.eventType,
        },
      });
    }
    return { startedAt, result };
  }

  async #record(d: DueDelivery, sealed: SendingSecrets | null, { startedAt, result }: { startedAt: number; result: SendResult }): Promise<void> {
    const ctx = this.#ctx;
    if (!sealed) {
      // Nothing went on the wire: no attempt for `deliveries show` to list (a row read ahead was set aside since).
      const endpoint = d.endpointId === null ? undefined : ctx.repos.webhookEndpoints.get(d.endpointId);
      const why = endpoint && endpoint.deletedAt === null ? SET_ASIDE.disabled : SET_ASIDE.deleted;
      await this.#commitOutcome(d.id, ctx.repos.webhookDeliveries.statementsToSetAsideUnsent(d.id, ctx.clock.now(), why));
      return;
    }
    const outcome = classifyOutcome(result.timedOut ? { error: result.error } : { status: result.status, error: result.error });
    const finishedAt = ctx.clock.now();
    const next =
      outcome === 'success' ? { status: 'success' as const, nextAttemptAt: null, completedAt: finishedAt }
      : outcome === 'failed' ? { status: 'failed' as const, nextAttemptAt: null, completedAt: finishedAt }
      : (() => {
          const at = nextAttemptAt(d.attempts + 1, startedAt);
          return at === null ? { status: 'dead_letter' as const, nextAttemptAt: null, completedAt: finishedAt } : { status: 'attempting' as const, nextAttemptAt: at, completedAt: null };
        })();
    // Outcomes wait a few ms for each other: one fsync for many. A crash in
    // that window resends the attempt, which at-least-once delivery allows.
    // Plain statements: the db thread commits them, off this event loop.
    const write = ctx.repos.webhookDeliveries.statementsToFinishAttempt(d.id, {
      startedAt,
      durationMs: result.durationMs,
      statusCode: result.status ?? null,
      error: result.error ?? null,
      responseBody: result.responseBody,
    }, next);
    if (!(await this.#commitOutcome(d.id, write))) return;
    this.#attemptLog({ delivery_id: d.id, event_id: d.eventId, status_code: result.status, error: result.error, outcome: next.status, attempt: d.attempts + 1 });
  }

  /**
   * Commits an attempt's outcome; false if the worker stopped first. Until it
   * is committed the delivery stays in #inFlight and is not sent again. A
   * failed commit (another process holding the lock past the busy timeout, a
   * failed disk) is tried again, and while any outcome waits no attempt
   * starts: an attempt that cannot be recorded would be repeated off schedule,
   * unseen in `deliveries show`. Given up only by stop(): the attempt is then
   * made again after the restart (at least once).
   */
  async #commitOutcome(deliveryId: string, write: Statement[]): Promise<boolean> {
    let waiting = false;
    try {
      for (let retryMs = OUTCOME_RETRY_FIRST_MS; ; retryMs = Math.min(retryMs * 2, OUTCOME_RETRY_MAX_MS)) {
        try {
          await this.#ctx.writes.runStatements(write, OUTCOME_COMMIT_WAIT_MS);
          return true;
        } catch (err) {
          if (this.#stopping) throw err;
          if (!waiting) this.#unrecorded++;
          waiting = true;
          this.#logger.warn({ err, delivery_id: deliveryId, retry_in_ms: retryMs }, 'could not record a webhook outcome: trying again, and sending nothing new until it is recorded');
        }
        try {
          await sleep(retryMs, undefined, { signal: this.#stopped.signal });
        } catch {
          this.#logger.warn({ delivery_id: deliveryId }, 'webhook outcome not recorded before stopping: the attempt is made again after the restart');
          return false;
        }
      }
    } finally {
      if (waiting && --this.#unrecorded === 0) this.wake();
    }
  }
}
