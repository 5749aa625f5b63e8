import type { StoredInvoice } from '../../db/invoices.ts';
import type { Context } from '../../services/context.ts';
import type { ExternalChanges } from '../../services/external-changes.ts';
import { currentCheckoutView, isFinalForCheckout } from './checkout-view.ts';
import { StreamLimiter } from './stream-limits.ts';

/** Ticks per heartbeat period; each visits one group of streams. */
const TICK_SLOTS = 10;

/** One serialized state of an invoice, shared by every stream that sends it. */
export interface Snapshot {
  version: number;
  /** The checkout view as JSON text. */
  json: string;
}

/** How a stream reaches its client: SSE and WebSocket each implement it. */
export interface StreamSink {
  send(snapshot: Snapshot): void;
  /** Called every heartbeat period while the stream is open. */
  heartbeat(): void;
  /**
   * Ends the stream from the server's side: after a final state, or because
   * nothing more can be told (the database failed) and the client should go
   * on another way.
   */
  end(why: StreamEnd): void;
}

/** `stopping`: Till is shutting down; the client reconnects to the restarted till. */
export type StreamEnd = 'final' | 'unavailable' | 'stopping';

export interface OpenedStream {
  /** False when the client already had the current version (an SSE resume). */
  sentSnapshot: boolean;
  /** Ends the stream; call it when the client goes away. Idempotent. */
  close(): void;
  readonly closed: boolean;
}

export interface InvoiceStreamsOptions {
  heartbeatMs: number;
  maxPerClient: number;
  maxTotal: number;
  /** A change that could not be sent to a stream (its snapshot could not be read); the stream is ended. */
  onError(err: unknown): void;
  /** Aborted when Till begins to stop: every stream ends (1001), and one opened after ends once it has its snapshot. */
  stopping: AbortSignal;
}

/**
 * Live checkout streams of invoice snapshots. A stream gets the snapshot on
 * open (unless the client already has that version), then one per committed
 * change, in version order, and ends after a final state. One timer for all
 * streams drives heartbeats and closes streams whose invoice became final by
 * the passing of time alone (the end of the late window writes nothing).
 */
export class InvoiceStreams {
  readonly #ctx: Context;
  readonly #external: ExternalChanges;
  readonly #heartbeatMs: number;
  readonly #onError: (err: unknown) => void;
  readonly #stopping: AbortSignal;
  readonly limiter: StreamLimiter;
  /**
   * Open streams in TICK_SLOTS groups, one group visited per tick: each
   * stream still gets a heartbeat every period, but thousands of them do not
   * all write in the same instant (which would stall every other request).
   */
  readonly #slots: Array<Set<Stream>> = Array.from({ length: TICK_SLOTS }, () => new Set());
  #openCount = 0;
  #nextSlot = 0;
  #tickCount = 0;
  /** Serialized once per published invoice object, however many streams send it. */
  readonly #snapshots = new WeakMap<StoredInvoice, Snapshot>();
  /**
   * The newest state of each streamed invoice, one object for all its
   * streams: they share its snapshot and encoded frames instead of holding a
   * copy each (a few KiB a stream, which adds up over thousands of buyers).
   */
  readonly #latest = new Map<string, { invoice: StoredInvoice; streams: number }>();
  #timer: NodeJS.Timeout | null = null;

  constructor(ctx: Context, external: ExternalChanges, opts: InvoiceStreamsOptions) {
    this.#ctx = ctx;
    this.#external = external;
    this.#heartbeatMs = opts.heartbeatMs;
    this.#onError = opts.onError;
    this.#stopping = opts.stopping;
    this.limiter = new StreamLimiter({ perClient: opts.maxPerClient, total: opts.maxTotal });
    // A closed feed tells no stream anything more: end them, so pages stop waiting on a silent stream.
    ctx.feed.whenClosed(() => this.#endAll('unavailable'));
    // Pages reconnect to the restarted till.
    opts.stopping.addEventListener('abort', () => this.#endAll('stopping'), { once: true });
  }

  #endAll(why: StreamEnd): void {
    for (const slot of this.#slots) for (const stream of [...slot]) stream.close(true, why);
  }

  /** The snapshot of this state, made once for every stream that sends it now (a change reaching them all). */
  snapshotOf(inv: StoredInvoice): Snapshot {
    let snap = this.#snapshots.get(inv);
    if (!snap) {
      snap = this.freshSnapshotOf(inv);
      this.#snapshots.set(inv, snap);
    }
    return snap;
  }

  /**
   * The snapshot as of now: its server_time (the page's countdown) and store
   * branding current, for a client just arrived, while the shared one is as
   * old as the last change.
   */
  freshSnapshotOf(inv: StoredInvoice): Snapshot {
    return { version: inv.version, json: JSON.stringify(currentCheckoutView(this.#ctx, inv)) };
  }

  /**
   * Opens a stream, or returns null when the invoice does not exist. Throws
   * stream_limit_reached when the limits are reached. `clientVersion` is the
   * version the client already has (SSE Last-Event-ID), if any.
   */
  open(invoiceId: string, client: string, sink: StreamSink, clientVersion: number | null = null): OpenedStream | null {
    const release = this.limiter.acquire(client);
    const stream = new Stream(this, sink, release);
    try {
      return this.#start(stream, invoiceId, clientVersion);
    } catch (err) {
      // A read that failed (the database) must not keep the client's slot and subscription.
      stream.close(false);
      throw err;
    }
  }

  #start(stream: Stream, invoiceId: string, clientVersion: number | null): OpenedStream | null {
    // Subscribe before reading, so a change committed in between is not lost.
    const unsubscribe = this.#ctx.feed.subscribe(invoiceId, (inv) => this.#deliver(stream, inv));
    stream.cleanups.push(unsubscribe);
    const loaded = this.#ctx.repos.invoices.get(invoiceId);
    if (!loaded) {
      stream.close(false);
      return null;
    }
    const invoice = this.#retain(loaded);
    stream.cleanups.push(() => this.#release(invoiceId));
    stream.cleanups.push(this.#external.watch(invoiceId, invoice.version));
    stream.slot = this.#nextSlot++ % TICK_SLOTS;
    this.#slots[stream.slot]!.add(stream);
    this.#openCount++;
    this.#startTimer();
    const sentSnapshot = clientVersion !== invoice.version;
    if (sentSnapshot) stream.update(invoice, true);
    else stream.adopt(invoice);
    if (!stream.closed && isFinalForCheckout(invoice, this.#ctx.clock.now())) stream.close();
    else if (!stream.closed && this.#stopping.aborted) stream.close(true, 'stopping');
    return {
      sentSnapshot,
      close: () => stream.close(false),
      get closed() {
        return stream.closed;
      },
    };
  }

  /**
   * A published change to one stream. Its failure stays here: the writer that
   * published has committed, and must not answer as if it had not.
   */
  #deliver(stream: Stream, inv: StoredInvoice): void {
    try {
      stream.update(this.#share(inv));
    } catch (err) {
      this.#onError(err);
      stream.close(true, 'unavailable');
    }
  }

  #retain(loaded: StoredInvoice): StoredInvoice {
    const entry = this.#latest.get(loaded.id);
    if (!entry) {
      this.#latest.set(loaded.id, { invoice: loaded, streams: 1 });
      return loaded;
    }
    entry.streams++;
    return this.#share(loaded);
  }

  #release(invoiceId: string): void {
    const entry = this.#latest.get(invoiceId);
    if (entry && --entry.streams === 0) this.#latest.delete(invoiceId);
  }

  /** The shared object for this state of the invoice (or a newer one). */
  #share(inv: StoredInvoice): StoredInvoice {
    const entry = this.#latest.get(inv.id);
    if (!entry) return inv;
    if (inv.version > entry.invoice.version) entry.invoice = inv;
    return entry.invoice;
  }

  /** For Stream: the time on Till's clock. */
  now(): number {
    return this.#ctx.clock.now();
  }

  /** For Stream: drops a closed stream from the tick groups. */
  forget(stream: Stream): void {
    if (!this.#slots[stream.slot]!.delete(stream)) return;
    if (--this.#openCount === 0 && this.#timer) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  #startTimer(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      const now = this.#ctx.clock.now();
      for (const stream of [...this.#slots[this.#tickCount++ % TICK_SLOTS]!]) stream.tick(now);
    }, this.#heartbeatMs / TICK_SLOTS);
    this.#timer.unref();
  }
}

/** One client's stream: what it was last sent, and how to end it. */
class Stream {
  readonly cleanups: Array<() => void> = [];
  closed = false;
  /** Which tick group the stream is in. */
  slot = 0;
  #ending = false;
  #invoice: StoredInvoice | null = null;
  readonly #hub: InvoiceStreams;
  readonly #sink: StreamSink;

  constructor(hub: InvoiceStreams, sink: StreamSink, release: () => void) {
    this.#hub = hub;
    this.#sink = sink;
    this.cleanups.push(release);
  }

  /** Takes the client's current state without sending it. */
  adopt(inv: StoredInvoice): void {
    this.#invoice = inv;
  }

  /** Sends this state unless the client has it; `fresh`: a snapshot made now, not the shared one. */
  update(inv: StoredInvoice, fresh = false): void {
    // Versions only grow; an older or repeated publish (the external-change
    // poller racing an in-process writer) is skipped.
    if (this.closed || this.#ending || (this.#invoice && inv.version <= this.#invoice.version)) return;
    this.#invoice = inv;
    this.#sink.send(fresh ? this.#hub.freshSnapshotOf(inv) : this.#hub.snapshotOf(inv));
    if (isFinalForCheckout(inv, this.#hub.now())) {
      // Ending a stream costs more than sending to it: with thousands on one
      // invoice, every final frame goes out first, the ends follow.
      this.#ending = true;
      setImmediate(() => this.close());
    }
  }

  tick(now: number): void {
    if (this.closed) return;
    if (this.#invoice && isFinalForCheckout(this.#invoice, now)) this.close();
    else this.#sink.heartbeat();
  }

  /** Frees everything; `endSink` is false when the client is already gone. */
  close(endSink = true, why: StreamEnd = 'final'): void {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.cleanups.splice(0)) fn();
    this.#hub.forget(this);
    if (endSink) this.#sink.end(why);
  }
}
