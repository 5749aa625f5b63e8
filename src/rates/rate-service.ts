// The USD per BTC rate fiat invoices are priced at. A background loop asks every
// provider in parallel and keeps the median of those that answer and agree; the result is
// persisted so a restart without internet still has it. Nothing ever waits on a
// provider except the loop itself: current() answers from memory at once.
import { type Clock, toIso } from '../clock.ts';
import { ApiError } from '../domain/errors.ts';
import type { RateProvider } from './provider.ts';

export interface StoredRate {
  /** USD per BTC in integer cents. */
  rateCentsPerBtc: number;
  /** 'fixed', a provider name, or e.g. 'median(kraken,bitstamp)'. */
  source: string;
  /** Epoch ms when the providers answered. */
  fetchedAt: number;
}

export interface RateStore {
  load(): StoredRate | null;
  /** May be asynchronous (the server's goes through its write queue); a refresh waits for it. */
  save(rate: StoredRate): void | Promise<void>;
}

/** The subset of a pino logger this service uses. */
export interface RateLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface RateServiceOptions {
  providers: readonly RateProvider[];
  clock: Clock;
  store: RateStore;
  /** Pause between the end of one refresh and the start of the next. */
  refreshIntervalMs?: number;
  /** Older than this, current() refuses: 503 rates_unavailable. */
  maxAgeMs?: number;
  logger?: RateLogger;
}

export const DEFAULT_REFRESH_INTERVAL_MS = 60_000;
export const DEFAULT_MAX_AGE_MS = 600_000;
/** A rate stamped further ahead of the clock than this is of unknown age, so stale. */
const FUTURE_TOLERANCE_MS = 60_000;

export class RateService {
  readonly #providers: readonly RateProvider[];
  readonly #clock: Clock;
  readonly #store: RateStore;
  readonly #refreshIntervalMs: number;
  readonly #maxAgeMs: number;
  readonly #logger: RateLogger | undefined;
  /** Set when the only source is `fixed:`; such a rate is never stale. */
  readonly #fixedCentsPerBtc: number | undefined;
  #last: StoredRate | null = null;
  #inFlight: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Bumped by start() and stop(), so a loop from before a restart ends itself. */
  #generation = 0;
  #running = false;
  #abort = new AbortController();

  constructor(options: RateServiceOptions) {
    if (options.providers.length === 0) throw new Error('rate service needs at least one rate source');
    const fixed = options.providers.find((p) => p.fixedCentsPerBtc !== undefined);
    if (fixed && options.providers.length > 1) {
      throw new Error('rate service: a fixed rate cannot be combined with other sources');
    }
    this.#providers = options.providers;
    this.#clock = options.clock;
    this.#store = options.store;
    this.#refreshIntervalMs = options.refreshIntervalMs ?? DEFAULT_REFRESH_INTERVAL_MS;
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.#logger = options.logger;
    this.#fixedCentsPerBtc = fixed?.fixedCentsPerBtc;
    if (this.#fixedCentsPerBtc === undefined) this.#last = this.#loadStored();
  }

  /** Begins refreshing in the background, the first time right now. Returns at once. */
  start(): void {
    if (this.#running || this.#fixedCentsPerBtc !== undefined) return;
    this.#running = true;
    void this.#loop(++this.#generation);
  }

  /** Stops the loop and cancels requests under way; resolves once they have settled. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#generation++;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#abort.abort();
    this.#abort = new AbortController();
    await this.#inFlight;
  }

  /**
   * Asks every provider now and keeps the median of the answers that agree
   * (agreeOnRate). If none answers, or they disagree, the last rate stays (and ages). Never rejects; a refresh already
   * under way is joined rather than doubled. A fixed rate has nothing to refresh.
   */
  refreshNow(): Promise<void> {
    this.#inFlight ??= this.#refresh().finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  /**
   * The rate to price a fiat invoice at now. Throws 503 rates_unavailable when
   * there is none or it is older than maxAgeMs (exactly maxAgeMs is still fresh).
   */
  current(): StoredRate {
    const now = this.#clock.now();
    // A fixed rate is priced "now": it is as true now as when it was configured.
    if (this.#fixedCentsPerBtc !== undefined) {
      return { rateCentsPerBtc: this.#fixedCentsPerBtc, source: 'fixed', fetchedAt: now };
    }
    const last = this.#last;
    if (!last) {
      throw new ApiError('rates_unavailable', 'No USD rate yet: no rate source has answered. Sats invoices still work.');
    }
    // Stamped ahead of now (saved while the clock ran fast): its age is unknown, so it is not fresh.
    if (now - last.fetchedAt > this.#maxAgeMs || last.fetchedAt > now + FUTURE_TOLERANCE_MS) {
      throw new ApiError(
        'rates_unavailable',
        `The USD rate is stale: last fetched at ${toIso(last.fetchedAt)} from ${last.source}. Sats invoices still work.`,
      );
    }
    return { ...last };
  }

  async #loop(generation: number): Promise<void> {
    await this.refreshNow();
    if (generation !== this.#generation) return;
    this.#timer = setTimeout(() => void this.#loop(generation), this.#refreshIntervalMs);
    // The server's sockets keep the process alive; this timer alone should not.
    this.#timer.unref();
  }

  async #refresh(): Promise<void> {
    if (this.#fixedCentsPerBtc !== undefined) return;
    const signal = this.#abort.signal;
    const results = await Promise.allSettled(this.#providers.map((p) => p.fetchRate(signal)));
    const answered: { name: string; cents: number }[] = [];
    const failures: Record<string, string> = {};
    results.forEach((result, i) => {
      const name = this.#providers[i]!.name;
      if (result.status === 'fulfilled' && isValidRate(result.value)) {
        answered.push({ name, cents: result.value });
      } else {
        failures[name] = result.status === 'rejected' ? describeFailure(result.reason) : `bad rate ${String(result.value)}`;
      }
    });
    if (signal.aborted) return;
    if (Object.keys(failures).length > 0) {
      this.#logger?.warn({ failures, answered: answered.length }, 'rate sources failed');
    }
    if (answered.length === 0) return;
    const agreed = agreeOnRate(answered);
    if (agreed.used.length < answered.length) {
      const quotes = Object.fromEntries(answered.map((a) => [a.name, (a.cents / 100).toFixed(2)]));
      this.#logger?.warn({ quotes, left_out: agreed.left }, agreed.cents === null ? 'rate sources disagree: the last rate stays' : 'rate source far from the others left out');
    }
    if (agreed.cents === null) return;
    const rate: StoredRate = {
      rateCentsPerBtc: agreed.cents,
      source: agreed.used.length === 1 ? agreed.used[0]! : `median(${agreed.used.join(',')})`,
      fetchedAt: this.#clock.now(),
    };
    this.#last = rate;
    try {
      await this.#store.save(rate);
    } catch (error) {
      // The rate in memory is still good; only a restart would miss it.
      this.#logger?.warn({ error: describeFailure(error) }, 'could not persist the USD rate');
    }
  }

  #loadStored(): StoredRate | null {
    let stored: StoredRate | null;
    try {
      stored = this.#store.load();
    } catch (error) {
      this.#logger?.warn({ error: describeFailure(error) }, 'could not load the stored USD rate');
      return null;
    }
    if (stored === null) return null;
    if (!isValidRate(stored.rateCentsPerBtc) || !Number.isSafeInteger(stored.fetchedAt) || typeof stored.source !== 'string') {
      this.#logger?.warn({ stored }, 'ignoring a malformed stored USD rate');
      return null;
    }
    return { rateCentsPerBtc: stored.rateCentsPerBtc, source: stored.source, fetchedAt: stored.fetchedAt };
  }
}

/** How far (in basis points of the median) a quote may be from the median of all quotes and still count. */
export const AGREEMENT_BPS = 500;

/**
 * The median of the quotes that agree: a quote more than 5 % from the median
 * of all is left out (a provider answering in another unit, or a stuck
 * market), and the rest count only if they are more than half of the
 * answers. Otherwise there is no rate (`cents` null): two quotes more than
 * ~10 % apart (one in cents, say) are each over 5 % from their mean, which
 * the median alone would price at though neither said it. One quote has
 * nothing to be checked against and is taken.
 */
export function agreeOnRate(quotes: readonly { name: string; cents: number }[]): { cents: number | null; used: string[]; left: string[] } {
  const all = medianCents(quotes.map((q) => q.cents));
  // Integer comparison: |cents - all| * 10,000 <= all * bps, exact up to 2^53 for any real rate.
  const agrees = (q: { cents: number }) => Math.abs(q.cents - all) * 10_000 <= all * AGREEMENT_BPS;
  const kept = quotes.filter(agrees);
  const left = quotes.filter((q) => !agrees(q)).map((q) => q.name);
  if (kept.length * 2 <= quotes.length) return { cents: null, used: [], left };
  return { cents: medianCents(kept.map((q) => q.cents)), used: kept.map((q) => q.name), left };
}

/**
 * Median in integer cents; for an even count the mean of the two middle values,
 * rounded half up (integer halving, no float).
 */
export function medianCents(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  if (sorted.length % 2 === 1) return sorted[mid]!;
  const sum = sorted[mid - 1]! + sorted[mid]!;
  return (sum - (sum % 2)) / 2 + (sum % 2);
}

function isValidRate(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function describeFailure(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}
