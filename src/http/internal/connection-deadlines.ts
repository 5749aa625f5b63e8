/**
 * How long a client has to send its request (Node's headersTimeout and
 * requestTimeout). Node's defaults (60 s for the headers, 300 s for the whole
 * request, checked every 30 s) let a slow client hold a socket for up to 90 s
 * or 330 s: enough of them hold a till's memory and file descriptors. A buyer's
 * browser or a merchant's server sends a request in one or two packets.
 */
export interface ConnectionDeadlines {
  /** From connecting to a request's first byte, and from its first byte to the end of its headers. */
  headersMs: number;
  /** From a request's first byte to the end of its body. */
  requestMs: number;
}

export const CONNECTION_DEADLINES: ConnectionDeadlines = { headersMs: 15_000, requestMs: 30_000 };

/** The node:http server options for them (past a deadline Node emits 'clientError' ERR_HTTP_REQUEST_TIMEOUT: the 400 envelope). */
export function requestTimeoutOptions(deadlines: ConnectionDeadlines): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  return {
    headersTimeout: deadlines.headersMs,
    requestTimeout: Math.max(deadlines.requestMs, deadlines.headersMs),
    // Node checks the deadlines this often (30 s by default): a deadline is met within headersMs + this.
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(deadlines.headersMs / 4))),
  };
}
