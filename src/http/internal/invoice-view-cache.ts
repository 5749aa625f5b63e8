import type { StoredInvoice } from '../../db/invoices.ts';
import { invoiceView } from '../../domain/invoice-view.ts';
import type { Context } from '../../services/context.ts';

interface Entry {
  json: string;
  storeId: string;
  livemode: boolean;
}

/**
 * Serialized API views of invoices, for GET /v1/invoices/:id and list pages.
 * Merchants poll their invoices, and reading one with its payments and
 * serializing it costs more than the rest of the request. The cache is exact:
 * an entry is dropped when a change to its invoice is published, and every
 * entry when another process commits (PRAGMA data_version moved) or a block
 * is connected or disconnected (confirmation counts of older payments move
 * without a published change).
 */
export class InvoiceViewCache {
  readonly #ctx: Context;
  readonly #max: number;
  readonly #entries = new Map<string, Entry>();
  #dataVersion = -1;
  #blockChanges = -1;

  constructor(ctx: Context, max = 10_000) {
    this.#ctx = ctx;
    this.#max = max;
    ctx.feed.subscribeAll((inv) => this.#entries.delete(inv.id));
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
    // Oldest first in a Map: beyond the bound, the oldest entry goes.
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(inv.id, { json, storeId: inv.storeId, livemode: inv.livemode });
    return json;
  }

  #dropIfStale(): void {
    const dataVersion = this.#ctx.repos.meta.dataVersion();
    const blockChanges = this.#ctx.chain.blockChanges;
    if (dataVersion === this.#dataVersion && blockChanges === this.#blockChanges) return;
    this.#entries.clear();
    this.#dataVersion = dataVersion;
    this.#blockChanges = blockChanges;
  }
}
