import { ApiError } from '../../domain/errors.ts';

/** Seconds a client is told to wait when the stream limits are reached. */
export const STREAM_RETRY_AFTER_SECONDS = 5;

/**
 * Counts open checkout streams (SSE and WebSocket together) per client address
 * and in total. A stream takes a slot when it opens and gives it back once,
 * however it ends.
 */
export class StreamLimiter {
  readonly #perClient: number;
  readonly #total: number;
  readonly #byClient = new Map<string, number>();
  #open = 0;

  constructor(limits: { perClient: number; total: number }) {
    this.#perClient = limits.perClient;
    this.#total = limits.total;
  }

  get open(): number {
    return this.#open;
  }

  /** Throws 503 stream_limit_reached when a new stream for this client would exceed a limit. */
  assertRoom(client: string): void {
    if (this.#open >= this.#total) {
      throw limitError(`the server holds its maximum of ${this.#total} live streams; retry later or poll GET /pay/invoices/:id`);
    }
    if ((this.#byClient.get(client) ?? 0) >= this.#perClient) {
      throw limitError(`this address already holds ${this.#perClient} live stream${this.#perClient === 1 ? '' : 's'}; close one or retry later`);
    }
  }

  /** Takes a slot (or throws like assertRoom); the returned function frees it, once. */
  acquire(client: string): () => void {
    this.assertRoom(client);
    this.#open++;
    this.#byClient.set(client, (this.#byClient.get(client) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      const left = (this.#byClient.get(client) ?? 1) - 1;
      if (left === 0) this.#byClient.delete(client);
      else this.#byClient.set(client, left);
    };
  }
}

function limitError(message: string): ApiError {
  return new ApiError('stream_limit_reached', message, { retry_after_seconds: STREAM_RETRY_AFTER_SECONDS });
}
