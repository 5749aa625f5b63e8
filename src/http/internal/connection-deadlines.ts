import type { Server, Socket } from 'node:net';

/**
 * How long a client has to send its request. Node's own defaults (headers 60 s,
 * the whole request 300 s, checked every 30 s) let a slow client hold a socket
 * for minutes, and a client that connects and sends nothing at all for ever:
 * enough of them hold a till's memory and file descriptors. A buyer's browser
 * or a merchant's server sends a request in one or two packets.
 */
export interface ConnectionDeadlines {
  /** From connecting (or from a kept-alive request's first byte) to the end of its headers. */
  headersMs: number;
  /** From a request's first byte to the end of its body. */
  requestMs: number;
}

export const CONNECTION_DEADLINES: ConnectionDeadlines = { headersMs: 15_000, requestMs: 30_000 };

/** The node:http server options that time a request once its first byte is in (Node answers 'clientError' ERR_HTTP_REQUEST_TIMEOUT). */
export function requestTimeoutOptions(deadlines: ConnectionDeadlines): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  return {
    headersTimeout: deadlines.headersMs,
    requestTimeout: Math.max(deadlines.requestMs, deadlines.headersMs),
    // Node checks the deadlines this often (30 s by default): a deadline is met within headersMs + this.
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(deadlines.headersMs / 4))),
  };
}

/**
 * Closes a connection that has sent nothing within `headersMs` of connecting.
 * Node's headersTimeout starts at a request's first byte, so it never ends a
 * connection that sends none. One that has sent something is left to Node,
 * which answers it (the envelope, from the 'clientError' listener).
 */
export function closeSilentConnections(server: Server, headersMs: number): void {
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.bytesRead === 0 && socket.destroy(), headersMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}
