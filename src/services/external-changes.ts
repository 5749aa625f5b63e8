import type { Context } from './context.ts';

/**
 * Brings invoice changes committed by another process (the admin CLI on the
 * same SQLite file) to ctx.feed, where in-process writers publish theirs.
 * `PRAGMA data_version` changes only when another connection commits, so a
 * poll with nothing new costs one tiny query; when it moved, the watched
 * invoices whose `version` went up are re-read and published.
 */
export class ExternalChanges {
  readonly #ctx: Context;
  /** Invoice id -> how many streams watch it and the newest version published. */
  readonly #watched = new Map<string, { watchers: number; version: number }>();
  #lastDataVersion: number;

  constructor(ctx: Context) {
    this.#ctx = ctx;
    this.#lastDataVersion = ctx.repos.meta.dataVersion();
    // In-process writers publish their own changes: remember those versions so
    // they are not published a second time.
    ctx.feed.subscribeAll((inv) => {
      const w = this.#watched.get(inv.id);
      if (w && inv.version > w.version) w.version = inv.version;
    });
  }

  /**
   * Watches an invoice whose subscriber already has `version`; the returned
   * function stops watching (once).
   */
  watch(invoiceId: string, version: number): () => void {
    const w = this.#watched.get(invoiceId);
    if (w) {
      w.watchers++;
      // The oldest version a watcher may have: a newer subscriber may have read
      // another process's change that the older ones still wait for (each
      // stream skips a version it already has).
      w.version = Math.min(w.version, version);
    } else {
      this.#watched.set(invoiceId, { watchers: 1, version });
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const entry = this.#watched.get(invoiceId);
      if (entry && --entry.watchers === 0) this.#watched.delete(invoiceId);
    };
  }

  get watchedCount(): number {
    return this.#watched.size;
  }

  /** One look at the database; returns how many invoices were published. */
  poll(): number {
    const dataVersion = this.#ctx.repos.meta.dataVersion();
    if (dataVersion === this.#lastDataVersion) return 0;
    this.#lastDataVersion = dataVersion;
    if (this.#watched.size === 0) return 0;
    const moved = this.#ctx.repos.invoices
      .versionsOf([...this.#watched.keys()])
      .filter((row) => row.version > (this.#watched.get(row.id)?.version ?? Infinity));
    let published = 0;
    for (const { id } of moved) {
      const inv = this.#ctx.repos.invoices.get(id);
      if (!inv) continue;
      this.#ctx.feed.publish(inv);
      published++;
    }
    return published;
  }
}
