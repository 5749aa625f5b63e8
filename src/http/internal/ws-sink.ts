import type { Peer } from 'crossws';
import type { Snapshot, StreamSink } from './invoice-streams.ts';

/** Close codes of the checkout WebSocket (4000-4999 are the application's). */
export const WS_CLOSE = {
  final: { code: 1000, reason: 'invoice final' },
  tryAgainLater: { code: 1013, reason: 'stream limit reached' },
  unavailable: { code: 1013, reason: 'database unavailable' },
  stopping: { code: 1001, reason: 'server restarting' },
  notFound: { code: 4404, reason: 'invoice not found' },
  internalError: { code: 1011, reason: 'internal error' },
} as const;

/** Bytes a client may leave unsent in its buffer before it is dropped as stuck. */
const MAX_BUFFERED_BYTES = 1 << 20;

const messages = new WeakMap<Snapshot, string>();

function messageOf(snap: Snapshot): string {
  let text = messages.get(snap);
  if (text === undefined) {
    text = `{"type":"invoice","data":${snap.json}}`;
    messages.set(snap, text);
  }
  return text;
}

/**
 * A checkout stream over WebSocket. Keep-alive needs nothing here: crossws's
 * node adapter pings every peer each idle period and terminates one that did
 * not answer the previous ping.
 */
export function wsSink(peer: Peer): StreamSink {
  return {
    send(snapshot) {
      peer.send(messageOf(snapshot));
      dropIfStuck(peer);
    },
    heartbeat() {},
    end(why) {
      const { code, reason } = WS_CLOSE[why];
      peer.close(code, reason);
    },
  };
}

/**
 * Drops a client that reads nothing while what it is owed piles up: Till's
 * messages, or the pong ws sends for each of its pings (a client may ping as
 * fast as it can write, and crossws counts its pings as signs of life).
 */
export function dropIfStuck(peer: Peer): void {
  if (peer.bufferedAmount > MAX_BUFFERED_BYTES) peer.terminate();
}
