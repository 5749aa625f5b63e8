import { getWebSocketHooks, type Hooks, type WSOptions } from 'crossws';
import { serve } from 'crossws/server';
import type { H3 } from 'h3';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { RequestLog } from './middleware/request-context.ts';
import { clientErrorListener, connectListener, refuseUnservableRequest, refuseUpgradeWithInvalidHost } from './internal/client-error.ts';
import { CONNECTION_DEADLINES, requestTimeoutOptions, type ConnectionDeadlines } from './internal/connection-deadlines.ts';
import { directRoutesOf } from './internal/direct-routes.ts';

export interface HttpServer {
  url: string;
  port: number;
  /**
   * Stops listening. With `graceMs`, requests under way and WebSockets
   * closing get that long to finish before their connections are cut;
   * without, they are cut at once.
   */
  close(opts?: { graceMs?: number }): Promise<void>;
}

export interface ListenOptions {
  /**
   * crossws options (e.g. `options.node.idleTimeout`, the ping period in
   * seconds, 30 by default). Unless `resolve` is given, an upgrade request is
   * routed through the app like any request: a `defineWebSocketHandler` route
   * answers with its hooks, anything else (404, 503 stream limit, ...) is sent
   * back as the HTTP answer.
   */
  websocket?: WSOptions;
  /** Logs the requests Node's parser refuses (the app logs the others). */
  log?: RequestLog;
  /** How long a client has to send its request (CONNECTION_DEADLINES unless given). */
  deadlines?: ConnectionDeadlines;
}

/**
 * The largest WebSocket message Till reads. Buyers' messages are ignored, and
 * ws would otherwise buffer up to 100 MiB of each unfinished one.
 */
export const WS_MAX_PAYLOAD_BYTES = 4096;

/**
 * How long a closed WebSocket's connection waits for the client's close frame
 * before it is cut. ws waits 30 s: a client that never answers (closed 4404 for
 * an unknown invoice, say) could hold thousands of sockets without holding a stream.
 */
export const WS_CLOSE_TIMEOUT_MS = 5000;
/** The ws bundled in crossws takes this option; the ws typings do not name it. */
const WS_CLOSE_TIMEOUT = { closeTimeout: WS_CLOSE_TIMEOUT_MS } as object;

/** Answers one connection may owe at once (pipelined requests read, not yet answered in full); one more closes it. */
export const MAX_OWED_ANSWERS = 32;

/** Serves the app on a real socket (crossws's serve also upgrades WebSockets). */
export async function listen(app: H3, host: string, port: number, opts: ListenOptions = {}): Promise<HttpServer> {
  const websocket: WSOptions = {
    resolve: (req) => resolveThroughApp(app, req, opts.log),
    ...opts.websocket,
    options: {
      ...opts.websocket?.options,
      node: { getNamespace: pathOf, ...opts.websocket?.options?.node, serverOptions: { maxPayload: WS_MAX_PAYLOAD_BYTES, ...WS_CLOSE_TIMEOUT, ...opts.websocket?.options?.node?.serverOptions } },
    },
  };
  const deadlines = opts.deadlines ?? CONNECTION_DEADLINES;
  const server = serve({
    fetch: app.fetch, hostname: host, port, silent: true, gracefulShutdown: false, websocket,
    // Only a WebSocket upgrade leaves the HTTP path: an h2c offer (curl --http2) is ignored, as RFC 9110 7.8
    // allows, and the request answered with its body. A missing Host is refused by the app, in the envelope.
    node: { shouldUpgradeCallback: isWebSocketUpgrade, requireHostHeader: false, ...requestTimeoutOptions(deadlines) },
  });
  const { responses, answeredEarly, beginClosing } = takeRequests(app, server.node, opts.log);
  // An Expect other than 100-continue: served as if absent (RFC 9110 10.1.1 lets a server ignore it), not a bare 417.
  server.node?.server?.on('checkExpectation', (req, res) => server.node!.server!.emit('request', req, res));
  // Responses begun, or owed to a request read in full: a parser error's answer may not go before them.
  const answering = (socket: Socket) => (responses.get(socket) ?? []).filter((res) => !res.writableFinished && (res.headersSent || res.req.complete));
  const reading = (socket: Socket) => (responses.get(socket) ?? []).find((res) => !res.headersSent && !res.req.complete)?.req;
  server.node?.server?.on('connect', connectListener(opts.log));
  server.node?.server?.on('clientError', clientErrorListener({ answering, answered: (socket) => answeredEarly.get(socket)?.complete === false, reading }, opts.log));
  await server.ready();
  // Upgraded sockets leave the HTTP server's books: closing it neither ends
  // them nor finishes while they are open. Track them to drop them on close.
  const upgraded = new Set<Duplex>();
  server.node?.server?.on('upgrade', (_req, socket: Duplex) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // Node no longer listens for errors on an upgraded socket: a client gone
    // while crossws writes an HTTP answer to it would end the process.
    socket.on('error', () => socket.destroy());
  });
  const address = server.node?.server?.address();
  const boundPort = typeof address === 'object' && address ? address.port : port;
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${h}:${boundPort}`,
    port: boundPort,
    close: async ({ graceMs = 0 } = {}) => {
      beginClosing();
      const closed = Promise.all([...upgraded].map((s) => new Promise((r) => s.once('close', r))));
      const cut = () => {
        for (const socket of upgraded) socket.destroy();
        return server.close(true);
      };
      if (graceMs <= 0) return void (await Promise.all([cut(), closed]));
      const timer = setTimeout(() => void cut(), graceMs);
      // Node closes idle keep-alive connections at once; the others close as their answers end (beginClosing).
      await Promise.all([server.close(false), closed]);
      clearTimeout(timer);
    },
  };
}

/**
 * Replaces srvx's request listener (the handler it gave http.createServer)
 * with one that keeps each connection's unfinished responses, for the parser
 * errors' answers, and puts the app's direct routes ahead of srvx: a request
 * they do not take goes on to it as before. Once closing, every answer not
 * yet begun says Connection: close, and a kept-alive connection is closed as
 * soon as its answer is out: the server's close need not wait out its grace.
 *
 * A connection's responses are an array, not a Set: a long-lived Set or Map
 * that takes and drops an entry per request keeps the dropped ones alive
 * through V8's young collections once one of its tables has grown old, so
 * every request's objects would wait for a full collection
 * (docs/PERFORMANCE.md, twenty-eighth round). The Set of connections has
 * that churn only for clients that open a connection per request.
 */
function takeRequests(app: H3, node: ReturnType<typeof serve>['node'], log?: RequestLog): { responses: WeakMap<Socket, ServerResponse[]>; answeredEarly: WeakMap<Socket, IncomingMessage>; beginClosing(): void } {
  const responses = new WeakMap<Socket, ServerResponse[]>();
  /** The connections that have had a request: their answers not yet begun are told of the close. */
  const connections = new Set<Socket>();
  // The request each connection answered before its body was in (a 413, a 401), Node reading the rest: until
  // its body is complete (set by the parser before it reads further), errors are that request's.
  const answeredEarly = new WeakMap<Socket, IncomingMessage>();
  let closing = false;
  if (!node?.server) return { responses, answeredEarly, beginClosing: () => {} };
  const direct = directRoutesOf(app);
  const { server, handler } = node;
  server.off('request', handler);
  if (server.listenerCount('request') !== 0) throw new Error('srvx request listener not found');
  // One listener for every connection, and a first request's array holding just it: a checkout stream
  // holds its connection for minutes, so what each one keeps here counts at 10,000 streams.
  function forgetConnection(this: Socket): void {
    connections.delete(this);
  }
  server.on('request', (req, res) => {
    let open = responses.get(req.socket);
    if (!open) {
      responses.set(req.socket, (open = [res]));
      connections.add(req.socket);
      req.socket.on('close', forgetConnection);
    } else {
      // A client that pipelines requests without reading the answers would have them pile up here (each is
      // answered once read): none that browsers or proxies send owes this many on one connection. Refused
      // before it is kept: the requests already read behind it still arrive here, and must leave nothing.
      if (open.length >= MAX_OWED_ANSWERS) return void req.socket.destroy();
      open.push(res);
    }
    if (closing) res.shouldKeepAlive = false;
    res.once('close', () => {
      const i = open.indexOf(res);
      if (i >= 0) open.splice(i, 1);
      if (!req.complete) answeredEarly.set(req.socket, req);
      // Begun before the close: its connection, idle now, would wait for the grace.
      if (closing && 'closeIdleConnections' in server) setImmediate(() => server.closeIdleConnections());
    });
    if (refuseUnservableRequest(req, res, log)) return;
    if (!direct || !(direct.gets.take(req, res, handler) || direct.posts.take(req, res))) handler(req, res);
  });
  return {
    responses,
    answeredEarly,
    beginClosing() {
      closing = true;
      for (const socket of connections) for (const res of responses.get(socket) ?? []) if (!res.headersSent) res.shouldKeepAlive = false;
    },
  };
}

/**
 * crossws's own namespace of an upgrade is `new URL(request.url).pathname`,
 * which throws on a Host URL parsing refuses (`example.com:99999` passes
 * srvx's check): a bare 500 before the app saw the request. Till uses no
 * namespaces (no pub/sub); the path is taken as text instead.
 */
function pathOf(request: Request): string {
  return request.url.replace(/^[a-z]+:\/\/[^/]*/i, '').split('?', 1)[0]!;
}

function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').split(',').some((protocol) => protocol.trim().toLowerCase() === 'websocket');
}

async function resolveThroughApp(app: H3, req: Request, log?: RequestLog): Promise<Partial<Hooks>> {
  const refused = refuseUpgradeWithInvalidHost(req, log);
  if (refused) return { upgrade: () => refused };
  const res = (await app.fetch(req)) as Response & { crossws?: Partial<Hooks> };
  // h3 puts the hooks on the request as well: middleware that rebuilds the
  // response (to add headers) drops the `crossws` property, the request keeps it.
  // Only while the answer is still the route's 426 placeholder: an answer
  // replaced since (a 503 after a failed fdatasync) is sent, not upgraded.
  const hooks = res.status === 426 ? (getWebSocketHooks(req) ?? res.crossws) : undefined;
  if (hooks) {
    await res.body?.cancel().catch(() => {});
    return hooks;
  }
  return { upgrade: () => res };
}
