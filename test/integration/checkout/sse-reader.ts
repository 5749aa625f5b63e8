// Reads a text/event-stream body the way EventSource would: messages with
// id/event/data fields, comments (": heartbeat") kept apart, and the end of
// the stream as a promise. Works on any Response (socket fetch or app.request).

export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

export class SseReader {
  readonly messages: SseMessage[] = [];
  readonly comments: string[] = [];
  /** The reconnection delay the server asked for, if any. */
  retryMs: number | null = null;
  /** Resolves when the server ends the stream (or the reader is closed). */
  readonly ended: Promise<void>;
  /** Unread messages and comments, each in arrival order. */
  readonly #unread: { message: SseMessage[]; comment: string[] } = { message: [], comment: [] };
  #wake: (() => void) | null = null;
  #done = false;
  readonly #abort: AbortController | null;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(res: Response, abort: AbortController | null = null) {
    if (!res.body) throw new Error(`no body (status ${res.status})`);
    this.#abort = abort;
    this.#reader = res.body.getReader();
    this.ended = this.#pump();
  }

  async #pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          this.#take(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch {
      // Aborted by close(): the end of the stream for the caller.
    } finally {
      this.#done = true;
      this.#wake?.();
    }
  }

  #take(block: string): void {
    const lines = block.split('\n');
    if (lines.every((l) => l.startsWith(':'))) {
      const text = lines.map((l) => l.slice(1).trim()).join('\n');
      this.comments.push(text);
      this.#unread.comment.push(text);
    } else {
      const message: SseMessage = { id: null, event: 'message', data: '' };
      const data: string[] = [];
      for (const line of lines) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') message.id = value;
        else if (field === 'event') message.event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'retry') this.retryMs = Number(value);
      }
      // Like EventSource: a block without data (a bare retry:) dispatches nothing.
      if (data.length === 0) return;
      message.data = data.join('\n');
      this.messages.push(message);
      this.#unread.message.push(message);
    }
    this.#wake?.();
  }

  /** The next unread message, skipping comments; rejects on timeout or when the stream ends first. */
  next(timeoutMs = 3000): Promise<SseMessage> {
    return this.#shift(this.#unread.message, timeoutMs);
  }

  /** The next message's data parsed as JSON. */
  async nextJson(timeoutMs = 3000): Promise<{ id: string | null; event: string; data: any }> {
    const m = await this.next(timeoutMs);
    return { id: m.id, event: m.event, data: JSON.parse(m.data) };
  }

  nextComment(timeoutMs = 3000): Promise<string> {
    return this.#shift(this.#unread.comment, timeoutMs);
  }

  /** True when no message (comments aside) arrives within ms. */
  async quietFor(ms: number): Promise<boolean> {
    try {
      await this.next(ms);
      return false;
    } catch {
      return true;
    }
  }

  async #shift<T>(queue: T[], timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (queue.length > 0) return queue.shift()!;
      if (this.#done) throw new Error('the stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`nothing within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
  }

  /** Ends the stream from the client's side, like closing the tab. */
  close(): void {
    this.#abort?.abort();
    this.#reader.cancel().catch(() => {});
  }
}
