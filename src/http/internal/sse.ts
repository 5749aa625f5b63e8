import type { Writable } from 'node:stream';
import type { Snapshot, StreamSink } from './invoice-streams.ts';

const HEARTBEAT = Buffer.from(': heartbeat\n\n');
/** Told to a reconnected client that already has the current version: a page sees its stream works (comments are invisible to it). */
const RESUMED = Buffer.from('event: resumed\ndata: {}\n\n');
/** Bytes a client may leave unread before it is dropped as stuck (~64 snapshots). */
const MAX_UNREAD_BYTES = 64 * 1024;
/**
 * Reconnection delay told to each EventSource, spread over a range so the
 * clients of a restarted server do not all come back in the same instant.
 */
const RETRY_MS = { min: 2000, spread: 3000 };

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

/** Encoded once per snapshot: every stream of the invoice sends the same bytes. */
const frames = new WeakMap<Snapshot, Buffer>();

function frameOf(snap: Snapshot): Buffer {
  let frame = frames.get(snap);
  if (!frame) {
    // JSON.stringify escapes newlines inside strings, so the data is one line.
    frame = Buffer.from(`id: ${snap.version}\nevent: invoice\ndata: ${snap.json}\n\n`);
    frames.set(snap, frame);
  }
  return frame;
}

/**
 * A Server-Sent Events response body that a stream writes to. It is
 * "pipe-able": srvx hands it the Node response itself (over a socket) or a
 * PassThrough (in-process), and frames are written straight to that. A web
 * ReadableStream, or even a Node Readable piped through, costs several KiB
 * more per open stream, and a till holds thousands of them.
 */
export class SseBody implements StreamSink {
  /** Called once when the client goes away (or is dropped as stuck). */
  onGone: () => void = () => {};
  #out: Writable | null = null;
  /** What was written before the server piped the body anywhere. */
  #early: Array<string | Buffer> = [];
  #ended = false;

  constructor() {
    // Something goes out at once: the response head is sent with the first
    // body bytes, and a resumed stream may have nothing else to say.
    const retry = RETRY_MS.min + Math.floor(Math.random() * RETRY_MS.spread);
    this.#early.push(`retry: ${retry}\n\n`);
  }

  /** Called by the server with where the body goes (srvx's pipe-able body contract). */
  pipe<T extends Writable>(out: T): T {
    this.#out = out;
    out.once('close', this.abort);
    for (const chunk of this.#early) out.write(chunk);
    this.#early = [];
    flattenResponseHead(out);
    if (this.#ended) out.end();
    return out;
  }

  /** Called when the response will not be sent (HEAD: src/http/internal/route.ts) or went away. */
  readonly abort = (): void => this.#gone();

  /** srvx's name for abort: the client went away before the body was piped (e.g. while its answer waited for an fdatasync). */
  readonly destroy = this.abort;

  send(snapshot: Snapshot): void {
    this.#write(frameOf(snapshot));
  }

  heartbeat(): void {
    this.#write(HEARTBEAT);
  }

  /** A resumed stream with nothing missed: a message the page can see, carrying no id (Last-Event-ID stays). */
  resumed(): void {
    this.#write(RESUMED);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#out?.end();
  }

  #write(chunk: Buffer): void {
    if (this.#ended) return;
    const out = this.#out;
    if (!out) {
      this.#early.push(chunk);
      return;
    }
    if (out.destroyed) return this.#gone();
    if (out.writableLength > MAX_UNREAD_BYTES) {
      // The client stopped reading: drop it rather than buffer without bound.
      out.destroy();
      return this.#gone();
    }
    out.write(chunk);
  }

  #gone(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.onGone();
  }
}

/**
 * Node keeps a response's head, once sent, as `_header`: a string built by
 * `+` from every header's pieces, held by V8 as a tree of ~34 small strings
 * (~1 KiB) for as long as the response lives. A stream lives for hours, so
 * the tree is flattened into one string (reading a character does it in
 * place): ~6 MiB less with 10,000 streams open (docs/PERFORMANCE.md). Nothing
 * else changes; on a Node without the field this does nothing.
 */
function flattenResponseHead(out: Writable): void {
  const head = (out as { _header?: unknown })._header;
  if (typeof head === 'string') head.charCodeAt(0);
}

/** The Last-Event-ID a reconnecting EventSource sends: our event ids are invoice versions. */
export function parseLastEventId(header: string | null): number | null {
  if (header === null || !/^\d{1,15}$/.test(header.trim())) return null;
  return Number(header.trim());
}
