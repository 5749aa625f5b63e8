import type { Subscriber } from 'zeromq';

// bitcoind's ZMQ notifications are a wake-up, not the truth (Core's
// doc/zmq.md: messages can be lost and are never replayed). The feed passes
// on what arrives and says when it cannot be trusted: a gap in a topic's
// 4-byte counter, a (re)connect, or a malformed message. The watcher answers
// each of those with a re-sync over RPC.

export const ZMQ_TOPICS = ['sequence', 'rawtx', 'hashblock'] as const;
export type ZmqTopic = (typeof ZMQ_TOPICS)[number];

export type SequenceLabel = 'C' | 'D' | 'A' | 'R';

export interface ZmqHandlers {
  rawtx(tx: Buffer): void;
  hashblock(hash: string): void;
  sequence(hash: string, label: SequenceLabel): void;
  /** Something may have been missed: re-sync. */
  resync(reason: string): void;
  malformed(topic: string, reason: string): void;
  /**
   * The socket stopped reading (not by stop()): nothing more comes from this
   * feed; make a new one. `delivered`: it had passed on a message before.
   */
  failed(reason: string, delivered: boolean): void;
}

export interface ZmqFeedOptions {
  endpoints: string[];
  handlers: ZmqHandlers;
}

/** Reads a 32-byte hash as bitcoind shows it (RPC byte order). */
function hashHex(buf: Buffer): string {
  return Buffer.from(buf).toString('hex');
}

export class ZmqFeed {
  readonly #endpoints: string[];
  readonly #h: ZmqHandlers;
  readonly #lastSeq = new Map<string, number>();
  #sock: Subscriber | null = null;
  #stopped = false;
  #connected = false;
  #delivered = false;

  constructor(opts: ZmqFeedOptions) {
    this.#endpoints = [...new Set(opts.endpoints)];
    this.#h = opts.handlers;
  }

  get connected(): boolean {
    return this.#connected;
  }

  get endpoints(): readonly string[] {
    return this.#endpoints;
  }

  async start(): Promise<void> {
    // Loaded here, not with this module: the single binary writes zeromq's native addon to its
    // cache folder to load it, and no command but serve should need that folder (till --version).
    const { Context, Subscriber } = await import('zeromq');
    // stop() came while it loaded.
    if (this.#stopped) return;
    // A context of its own (one more libzmq I/O thread): nothing else in the
    // process shares its state; linger 0: a SUB has nothing worth flushing.
    const sock = new Subscriber({ context: new Context(), linger: 0, reconnectInterval: 500, reconnectMaxInterval: 10_000, receiveHighWaterMark: 100_000 });
    this.#sock = sock;
    // Before connecting: zeromq makes the socket's event monitor on first use, and a handshake done
    // before it (libzmq's own thread connects) was missed: health said "disconnected" for good.
    void this.#watchConnection(sock);
    for (const e of this.#endpoints) sock.connect(e);
    for (const t of ZMQ_TOPICS) sock.subscribe(t);
    void this.#read(sock);
  }

  stop(): void {
    this.#stopped = true;
    const sock = this.#sock;
    this.#sock = null;
    this.#connected = false;
    sock?.close();
  }

  async #watchConnection(sock: Subscriber): Promise<void> {
    try {
      for (;;) {
        const event = await sock.events.receive();
        if (event.type === 'handshake') {
          // A restarted bitcoind starts its counters again; and what it
          // published while we were away is lost.
          this.#connected = true;
          this.#lastSeq.clear();
          this.#h.resync('zmq connected');
        } else if (event.type === 'disconnect') {
          // bitcoind stopped, or restarted: a sync now tells which (health says so at once, not at the next timer).
          this.#connected = false;
          this.#h.resync('zmq disconnected');
        } else if (event.type === 'end') {
          return;
        }
      }
    } catch (err) {
      this.#fail(sock, `its connection events: ${(err as Error).message}`);
    }
  }

  async #read(sock: Subscriber): Promise<void> {
    try {
      for await (const frames of sock) this.#handle(frames);
      this.#fail(sock, 'the socket was closed');
    } catch (err) {
      this.#fail(sock, (err as Error).message);
    }
  }

  /** Stopped on purpose, the socket is no longer ours: nothing to say. */
  #fail(sock: Subscriber, reason: string): void {
    if (this.#sock !== sock) return;
    this.stop();
    this.#h.failed(reason, this.#delivered);
  }

  #handle(frames: Buffer[]): void {
    const [topicBuf, body, seqBuf] = frames;
    const topic = topicBuf?.toString('latin1') ?? '';
    if (frames.length !== 3 || !body || !seqBuf || seqBuf.length !== 4) {
      this.#h.malformed(topic, `expected 3 frames with a 4-byte sequence, got ${frames.length}`);
      this.#h.resync(`malformed ${topic} message`);
      return;
    }
    this.#delivered = true;
    const seq = seqBuf.readUInt32LE(0);
    const last = this.#lastSeq.get(topic);
    this.#lastSeq.set(topic, seq);
    if (last !== undefined && seq !== ((last + 1) >>> 0)) this.#h.resync(`${topic} sequence gap ${last} -> ${seq}`);
    try {
      if (topic === 'rawtx') this.#h.rawtx(body);
      else if (topic === 'hashblock') {
        if (body.length !== 32) throw new Error('hash is not 32 bytes');
        this.#h.hashblock(hashHex(body));
      } else if (topic === 'sequence') {
        if (body.length !== 33 && body.length !== 41) throw new Error(`sequence body of ${body.length} bytes`);
        const label = String.fromCharCode(body[32]!);
        if (!['C', 'D', 'A', 'R'].includes(label)) throw new Error(`unknown sequence label ${label}`);
        this.#h.sequence(hashHex(body.subarray(0, 32)), label as SequenceLabel);
      }
    } catch (err) {
      this.#h.malformed(topic, (err as Error).message);
    }
  }
}
