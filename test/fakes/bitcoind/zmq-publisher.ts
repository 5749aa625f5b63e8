// bitcoind's ZMQ notifications: one socket on 127.0.0.1 for all topics (as
// with -zmqpubX=tcp://127.0.0.1:P for every X), frames [topic, body,
// 4-byte LE sequence], one counter per topic. The socket is an XPUB rather
// than a PUB so the fake can see subscriptions and offer waitForSubscriber();
// a SUB peer cannot tell the difference on the wire.
import * as zmq from 'zeromq';

/** In Core's notifier order (a std::map over the option names). */
export const ZMQ_TOPICS = ['hashblock', 'hashtx', 'rawblock', 'rawtx', 'sequence'] as const;
export type ZmqTopic = (typeof ZMQ_TOPICS)[number];

export interface ZmqMessage {
  topic: ZmqTopic;
  body: Uint8Array;
  /** The topic's counter value this message carries (whether or not it is dropped). */
  sequence: number;
}

/** Returns true for a message to lose on the way, as a flaky link would. */
export type ZmqDropPredicate = (message: ZmqMessage) => boolean;

const BIND_RETRIES = 40;
const BIND_RETRY_MS = 25;

export class ZmqPublisher {
  #topics: readonly ZmqTopic[];
  readonly hwm: number;
  #socket: zmq.XPublisher | null = null;
  #port = 0;
  readonly #counters = new Map<ZmqTopic, number>();
  #drop: ZmqDropPredicate | null = null;
  readonly #subscriptions = new Set<string>();
  readonly #waiters = new Set<() => void>();
  #sending: Promise<void> = Promise.resolve();

  constructor(topics: readonly ZmqTopic[], hwm: number) {
    this.#topics = ZMQ_TOPICS.filter((t) => topics.includes(t));
    this.hwm = hwm;
  }

  /** The topics published (bitcoind's -zmqpub… options). */
  get topics(): readonly ZmqTopic[] {
    return this.#topics;
  }

  get endpoint(): string {
    return `tcp://127.0.0.1:${this.#port}`;
  }

  get running(): boolean {
    return this.#socket !== null;
  }

  /** Binds (first time on a random port, afterwards on the same one); `topics`: a restart with other -zmqpub… options. */
  async start(opts: { resetCounters?: boolean; topics?: readonly ZmqTopic[] } = {}): Promise<void> {
    if (this.#socket) return;
    if (opts.resetCounters) this.#counters.clear();
    if (opts.topics) this.#topics = ZMQ_TOPICS.filter((t) => opts.topics!.includes(t));
    // Its own context: each fake node's sockets share no libzmq state with Till's or other tests'.
    const socket = new zmq.XPublisher({ context: new zmq.Context(), sendHighWaterMark: this.hwm, tcpKeepalive: 1, linger: 0 });
    const address = this.#port ? this.endpoint : 'tcp://127.0.0.1:*';
    for (let attempt = 1; ; attempt++) {
      try {
        await socket.bind(address);
        break;
      } catch (err) {
        // The previous socket's listener may still be closing in libzmq's I/O thread.
        if (!this.#port || attempt >= BIND_RETRIES) {
          socket.close();
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, BIND_RETRY_MS));
      }
    }
    this.#port = Number(new URL(socket.lastEndpoint!).port);
    this.#socket = socket;
    void this.#readSubscriptions(socket);
  }

  /**
   * Closes the socket. Events while stopped still advance the counters: their
   * messages are lost. `unlisted`: getzmqnotifications names none any more (a
   * bitcoind restarted without -zmqpub…).
   */
  async stop(opts: { unlisted?: boolean } = {}): Promise<void> {
    if (opts.unlisted) this.#topics = [];
    const socket = this.#socket;
    if (!socket) return;
    this.#socket = null;
    await this.#sending;
    this.#subscriptions.clear();
    await socket.unbind(this.endpoint).catch(() => undefined);
    socket.close();
  }

  setDropPredicate(predicate: ZmqDropPredicate | null): void {
    this.#drop = predicate;
  }

  /** Queues one notification; does nothing for a topic that is not enabled. */
  publish(topic: ZmqTopic, body: Uint8Array): void {
    if (!this.topics.includes(topic)) return;
    const sequence = this.#counters.get(topic) ?? 0;
    // Core increments after every send; the uint32 wraps.
    this.#counters.set(topic, (sequence + 1) >>> 0);
    if (this.#drop?.({ topic, body, sequence })) return;
    const socket = this.#socket;
    if (!socket) return;
    const seq = Buffer.alloc(4);
    seq.writeUInt32LE(sequence);
    // zeromq.js allows one send in flight per socket, so sends are chained.
    this.#sending = this.#sending.then(() => socket.send([topic, body, seq]).catch(() => undefined));
  }

  /** Resolves once every queued message has been handed to libzmq. */
  flush(): Promise<void> {
    return this.#sending;
  }

  /**
   * Resolves when some subscriber is subscribed to a prefix of each of
   * `topics` (default: every enabled topic). Guards against ZMQ's slow
   * joiner: what is published after this resolves reaches that subscriber.
   */
  waitForSubscriber(topics: readonly ZmqTopic[] = this.topics, timeoutMs = 5000): Promise<void> {
    const covered = (): boolean => topics.every((t) => [...this.#subscriptions].some((prefix) => t.startsWith(prefix)));
    if (covered()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!covered()) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`fake bitcoind: no ZMQ subscriber for ${topics.join(', ')} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.add(check);
    });
  }

  async #readSubscriptions(socket: zmq.XPublisher): Promise<void> {
    try {
      for await (const [frame] of socket) {
        if (!frame || frame.length === 0 || socket !== this.#socket) continue;
        const prefix = frame.subarray(1).toString('latin1');
        // XPUB passes up the first subscription to a prefix and the last unsubscription.
        if (frame[0] === 1) this.#subscriptions.add(prefix);
        else if (frame[0] === 0) this.#subscriptions.delete(prefix);
        for (const waiter of [...this.#waiters]) waiter();
      }
    } catch {
      // The socket was closed.
    }
  }
}
