import type { StoredInvoice } from '../../db/invoices.ts';
import { invoiceView } from '../../domain/invoice-view.ts';
import type { Context } from '../../services/context.ts';
import { getOrInsert } from '../../get-or-insert.ts';
import { setBounded } from '../../set-bounded.ts';

interface Entry {
  json: string;
  storeId: string;
  livemode: boolean;
}

/**
 * Serialized API views of invoices and whole list pages, for GET
 * /v1/invoices/:id and GET /v1/invoices. Merchants poll their invoices, and
 * reading them with their payments and serializing them costs more than the
 * rest of the request. The cache is exact: a view is dropped when a change to
 * its invoice is published, a store's pages when a change to any of its
 * invoices is (a creation included), and everything when another process
 * commits (PRAGMA data_version moved) or a block is connected or disconnected
 * (confirmation counts of older payments move without a published change).
 */
export class InvoiceViewCache {
  readonly #ctx: Context;
  readonly #max: number;
  readonly #maxPageChars: number;
  readonly #entries = new Map<string, Entry>();
  /** Store id → page key → page JSON; stores in the order their first page was cached. */
  readonly #pages = new Map<string, Map<string, string>>();
  #pageChars = 0;
  #dataVersion = -1;
  #blockChanges = -1;

  constructor(ctx: Context, opts: { max?: number; maxPageChars?: number } = {}) {
    this.#ctx = ctx;
    this.#max = opts.max ?? 10_000;
    // 4 MiB of pages: ~200 pages of 20 invoices, small beside the views.
    this.#maxPageChars = opts.maxPageChars ?? 4 * 1024 * 1024;
    ctx.feed.subscribeAll((inv) => {
      this.#entries.delete(inv.id);
      this.#dropPages(inv.storeId);
    });
  }

  /** A cached list page of this store, if it is still exact. */
  page(storeId: string, key: string): string | undefined {
    this.#dropIfStale();
    return this.#pages.get(storeId)?.get(key);
  }

  /** Remembers a page just built (no staleness check, as for viewOf). */
  setPage(storeId: string, key: string, json: string): void {
    if (json.length > this.#maxPageChars) return;
    // Oldest store first: its pages go until the new one fits.
    for (const oldest of this.#pages.keys()) {
      if (this.#pageChars + json.length <= this.#maxPageChars) break;
      this.#dropPages(oldest);
    }
    const pages = getOrInsert(this.#pages, storeId, () => new Map());
    this.#pageChars += json.length - (pages.get(key)?.length ?? 0);
    pages.set(key, json);
  }

  /** The cached view of this invoice, if it is still exact. */
  get(id: string): Entry | undefined {
    this.#dropIfStale();
    return this.#entries.get(id);
  }

  /** The exact cached views among these invoices (one staleness check for all). */
  getAll(ids: readonly string[]): Map<string, string> {
    this.#dropIfStale();
    const found = new Map<string, string>();
    for (const id of ids) {
      const entry = this.#entries.get(id);
      if (entry) found.set(id, entry.json);
    }
    return found;
  }

  /**
   * The JSON view of an invoice just read from the database, remembered. No
   * staleness check here: if another process committed since the last one,
   * the next get() drops this entry with the rest.
   */
  viewOf(inv: StoredInvoice): string {
    const json = JSON.stringify(invoiceView(inv, this.#ctx.baseUrl));
    setBounded(this.#entries, inv.id, { json, storeId: inv.storeId, livemode: inv.livemode }, this.#max);
    return json;
  }

  #dropIfStale(): void {
    const dataVersion = this.#ctx.repos.meta.dataVersion();
    const blockChanges = this.#ctx.chain.blockChanges;
    if (dataVersion === this.#dataVersion && blockChanges === this.#blockChanges) return;
    this.#entries.clear();
    this.#pages.clear();
    this.#pageChars = 0;
    this.#dataVersion = dataVersion;
    this.#blockChanges = blockChanges;
  }

  #dropPages(storeId: string): void {
    const pages = this.#pages.get(storeId);
    if (!pages) return;
    for (const json of pages.values()) this.#pageChars -= json.length;
    this.#pages.delete(storeId);
  }
}
