import type { StoredInvoice } from '../db/invoices.ts';
import { getOrInsert } from '../get-or-insert.ts';

type Listener = (invoice: StoredInvoice) => void;

/**
 * In-process publish/subscribe of committed invoice changes. Writers publish
 * after their transaction commits; checkout streams and the chain watcher's
 * watch set subscribe.
 */
export class InvoiceFeed {
  readonly #byInvoice = new Map<string, Set<Listener>>();
  readonly #all = new Set<Listener>();
  readonly #onClose = new Set<() => void>();
  #closed = false;

  subscribe(invoiceId: string, fn: Listener): () => void {
    const set = getOrInsert(this.#byInvoice, invoiceId, () => new Set());
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.#byInvoice.delete(invoiceId);
    };
  }

  subscribeAll(fn: Listener): () => void {
    this.#all.add(fn);
    return () => this.#all.delete(fn);
  }

  publish(invoice: StoredInvoice): void {
    if (this.#closed) return;
    for (const fn of this.#all) fn(invoice);
    const set = this.#byInvoice.get(invoice.id);
    if (set) for (const fn of [...set]) fn(invoice);
  }

  /** Publishes nothing from now on: after a failed fdatasync, no change may reach a buyer (docs/DECISIONS.md). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fn of this.#onClose) fn();
    this.#onClose.clear();
  }

  /** Calls fn once the feed is closed (at once if it already is); returns the way to cancel that. */
  whenClosed(fn: () => void): () => void {
    if (this.#closed) {
      fn();
      return () => {};
    }
    this.#onClose.add(fn);
    return () => this.#onClose.delete(fn);
  }

  subscriberCount(invoiceId: string): number {
    return this.#byInvoice.get(invoiceId)?.size ?? 0;
  }
}
