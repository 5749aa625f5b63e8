import type { Clock } from '../../clock.ts';
import type { InvoiceFeed } from '../../services/invoice-feed.ts';
import { setBounded } from '../../set-bounded.ts';

/**
 * Recently served GET /pay/invoices/:id bodies. Checkout pages poll, and
 * loading an invoice with its payments costs more than the rest of the
 * request. An entry is dropped the moment a change to its invoice is
 * published; it also lives at most `ttlMs`, because a change committed by
 * another process reaches the feed only for invoices someone streams, and
 * store branding changes publish nothing.
 */
export class SnapshotCache {
  readonly #entries = new Map<string, { json: string; at: number }>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(feed: InvoiceFeed, clock: Clock, opts: { ttlMs: number; max: number }) {
    this.#clock = clock;
    this.#ttlMs = opts.ttlMs;
    this.#max = opts.max;
    feed.subscribeAll((inv) => this.#entries.delete(inv.id));
  }

  get(invoiceId: string): string | null {
    const entry = this.#entries.get(invoiceId);
    if (!entry) return null;
    if (this.#clock.now() - entry.at >= this.#ttlMs) {
      this.#entries.delete(invoiceId);
      return null;
    }
    return entry.json;
  }

  set(invoiceId: string, json: string): void {
    setBounded(this.#entries, invoiceId, { json, at: this.#clock.now() }, this.#max);
  }
}
