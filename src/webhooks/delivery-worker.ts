import type { SealedSecrets } from '../db/webhook-endpoints.ts';
import type { DueDelivery } from '../db/webhook-deliveries.ts';
import type { Logger } from '../log.ts';
import type { Context } from '../services/context.ts';
import { dispatchEvents } from './dispatcher.ts';
import { ATTEMPT_TIMEOUT_MS, classifyOutcome, nextAttemptAt } from './schedule.ts';
import { validSecrets } from './secrets.ts';
import { sendWebhook, type SendResult } from './send.ts';
import { signPayload } from './signature.ts';

export const USER_AGENT = 'Service-Webhook/1.0';

export interface DeliveryWorkerOptions {
  /** Attempts under way at once, all receivers together. */
  maxInFlight?: number;
  /** Attempts under way at once to one receiver: a slow one cannot take every slot. */
  maxPerTarget?: number;
  timeoutMs?: number;
}

/**
 * Sends due deliveries. Due times live in SQLite (never in timers), so a
 * restart resumes the schedule where it was. Bounds: maxInFlight overall and
 * maxPerTarget per receiver, so one slow endpoint never holds up the others,
 * and its own later events still go out beside its hanging ones.
 */
export class DeliveryWorker {
  readonly #ctx: Context;
  readonly #logger: Logger;
  readonly #maxInFlight: number;
  readonly #maxPerTarget: number;
  readonly #timeoutMs: number;
  readonly #inFlight = new Map<string, Promise<void>>();
  readonly #perTarget = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #wakeScheduled = false;
  #unsubscribe: (() => void) | null = null;
  /** Unsealed secrets by sealed text: AES-GCM once per secret, not per attempt. */
  readonly #opened = new Map<string, string>();

  constructor(ctx: Context, logger: Logger, opts: DeliveryWorkerOptions = {}) {
    this.#ctx = ctx;
    this.#logger = logger;
    this.#maxInFlight = opts.maxInFlight ?? 256;
    this.#maxPerTarget = opts.maxPerTarget ?? 16;
    this.#timeoutMs = opts.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  }

  /** Polls every second and wakes at once when this process commits a change. */
  start(pollMs = 1000): void {
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.#unsubscribe = this.#ctx.feed.subscribeAll(() => this.wake());
    this.wake();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#unsubscribe?.();
    await Promise.all(this.#inFlight.values());
  }

  wake(): void {
    if (this.#wakeScheduled) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      this.pump().catch((err) => this.#logger.error({ err }, 'webhook worker failed'));
    });
  }

  /** Dispatches the outbox and starts every due attempt that fits the bounds; returns those attempts. */
  async pump(): Promise<Promise<void>[]> {
    // Most wakes (an attempt finished) find the outbox empty: check with a read before taking the write lock.
    while (this.#ctx.repos.events.hasUndispatched() && (await this.#ctx.writes.run(() => dispatchEvents(this.#ctx))) > 0);
    const now = this.#ctx.clock.now();
    const started: Promise<void>[] = [];
    for (const target of this.#ctx.repos.webhookDeliveries.dueTargets(now, 10_000)) {
      const busy = this.#perTarget.get(target) ?? 0;
      const room = Math.min(this.#maxPerTarget - busy, this.#maxInFlight - this.#inFlight.size);
      if (room <= 0) continue;
      const due = this.#ctx.repos.webhookDeliveries.dueForTarget(target, now, room + busy).filter((d) => !this.#inFlight.has(d.id));
      for (const d of due.slice(0, room)) started.push(this.#start(d));
      if (this.#inFlight.size >= this.#maxInFlight) break;
    }
    return started;
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
    const d = this.#ctx.repos.webhookDeliveries.getAttempting(id);
    if (d) await this.#start(d);
  }

  #start(d: DueDelivery): Promise<void> {
    this.#perTarget.set(d.target, (this.#perTarget.get(d.target) ?? 0) + 1);
    const p = this.#attempt(d)
      .catch((err) => this.#logger.error({ err, delivery_id: d.id }, 'webhook attempt failed'))
      .finally(() => {
        this.#inFlight.delete(d.id);
        const n = (this.#perTarget.get(d.target) ?? 1) - 1;
        if (n <= 0) this.#perTarget.delete(d.target);
        else this.#perTarget.set(d.target, n);
        this.wake();
      });
    this.#inFlight.set(d.id, p);
    return p;
  }

  #secretsFor(d: DueDelivery): SealedSecrets | null {
    if (d.endpointId === null) return this.#ctx.repos.webhookEndpoints.getCallbackSecrets(d.storeId);
    const ep = this.#ctx.repos.webhookEndpoints.get(d.endpointId);
    return ep && ep.enabled ? ep.secrets : null;
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

  async #attempt(d: DueDelivery): Promise<void> {
    const ctx = this.#ctx;
    const startedAt = ctx.clock.now();
    const sealed = this.#secretsFor(d);
    let result: SendResult;
    if (!sealed) {
      // The endpoint was disabled or deleted after the event: nothing is sent.
      result = { responseBody: null, error: 'endpoint disabled or deleted', timedOut: false, durationMs: 0 };
    } else {
      const secrets = validSecrets(
        this.#open(sealed.secret),
        sealed.previous ? this.#open(sealed.previous) : null,
        sealed.previousExpiresAt,
        startedAt,
      );
      // Signed afresh at every attempt: a retry carrying the first attempt's t would fail the 300 s check.
      const signature = signPayload(d.body, secrets, Math.floor(startedAt / 1000));
      result = await sendWebhook({
        url: d.url,
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
    const outcome = sealed ? classifyOutcome(result.timedOut ? { error: result.error } : { status: result.status, error: result.error }) : 'failed';
    const finishedAt = ctx.clock.now();
    const next =
      outcome === 'success' ? { status: 'success' as const, nextAttemptAt: null, completedAt: finishedAt }
      : outcome === 'failed' ? { status: 'failed' as const, nextAttemptAt: null, completedAt: finishedAt }
      : (() => {
          const at = nextAttemptAt(d.attempts + 1, startedAt);
          return at === null ? { status: 'dead_letter' as const, nextAttemptAt: null, completedAt: finishedAt } : { status: 'attempting' as const, nextAttemptAt: at, completedAt: null };
        })();
    await ctx.writes.run(() =>
      ctx.repos.webhookDeliveries.finishAttempt(d, {
        startedAt,
        durationMs: result.durationMs,
        statusCode: result.status ?? null,
        error: result.error ?? null,
        responseBody: result.responseBody,
      }, next),
    );
    this.#logger.info({ delivery_id: d.id, event_id: d.eventId, status_code: result.status, outcome: next.status, attempt: d.attempts + 1 }, 'webhook attempt');
  }
}
