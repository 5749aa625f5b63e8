import type { Snapshot, StreamSink } from './invoice-streams.ts';

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode(': heartbeat\n\n');
/** Chunks a client may leave unread before it is dropped as stuck. */
const MAX_UNREAD_CHUNKS = 64;
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
const frames = new WeakMap<Snapshot, Uint8Array>();

function frameOf(snap: Snapshot): Uint8Array {
  let frame = frames.get(snap);
  if (!frame) {
    // JSON.stringify escapes newlines inside strings, so the data is one line.
    frame = encoder.encode(`id: ${snap.version}\nevent: invoice\ndata: ${snap.json}\n\n`);
    frames.set(snap, frame);
  }
  return frame;
}

/** A Server-Sent Events response body that a stream writes to. */
export class SseBody implements StreamSink {
  readonly stream: ReadableStream<Uint8Array>;
  /** Called once when the client goes away (or is dropped as stuck). */
  onGone: () => void = () => {};
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #ended = false;

  constructor() {
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        // Something goes out at once: Node sends the response head with the
        // first body bytes, and a resumed stream may have nothing else to say.
        const retry = RETRY_MS.min + Math.floor(Math.random() * RETRY_MS.spread);
        controller.enqueue(encoder.encode(`retry: ${retry}\n\n`));
      },
      cancel: () => this.#gone(),
    });
  }

  send(snapshot: Snapshot): void {
    this.#write(frameOf(snapshot));
  }

  heartbeat(): void {
    this.#write(HEARTBEAT);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#controller?.close();
  }

  #write(chunk: Uint8Array): void {
    const controller = this.#controller;
    if (this.#ended || !controller) return;
    if ((controller.desiredSize ?? 0) < -MAX_UNREAD_CHUNKS) {
      controller.error(new Error('client stopped reading the event stream'));
      this.#gone();
      return;
    }
    controller.enqueue(chunk);
  }

  #gone(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.onGone();
  }
}

/** The Last-Event-ID a reconnecting EventSource sends: our event ids are invoice versions. */
export function parseLastEventId(header: string | null): number | null {
  if (header === null || !/^\d{1,15}$/.test(header.trim())) return null;
  return Number(header.trim());
}
