import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError } from '../../domain/errors.ts';
import { errorBody } from '../errors.ts';
import type { RequestLog } from '../middleware/request-context.ts';

// Requests Node's HTTP parser refuses (a Content-Length beside
// Transfer-Encoding: chunked, bytes after a short Content-Length, a bad
// chunk size) never reach the app. Node would answer a bare "400 Bad
// Request"; this answers them in the error envelope too, with a request id,
// and with the CORS header every /pay/ response carries (spec 4.2): the path
// is not known here, and the envelope holds nothing a page may not read.

function refusal(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('validation_error', 'the request headers are too large');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError('payload_too_large', 'the chunk extensions are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('validation_error', 'the request was not received in time');
    default:
      return new ApiError('validation_error', 'the request is not valid HTTP/1.1');
  }
}

/** What the server knows of a connection's requests. */
export interface ConnectionAnswers {
  /** Responses under way: one being written, or owed to a request read in full before the bad one (pipelined). */
  answering(socket: Socket): ServerResponse[];
  /** Whether the request in progress was answered already, before its body was in (a 413, a 401). */
  answered(socket: Socket): boolean;
  /** The request whose body the app is still reading, unanswered (a body that stalls past its deadline). */
  reading(socket: Socket): IncomingMessage | undefined;
}

// Requests this listener answered while the app still read their body: the app's
// own answer to the body it lost never reaches the client, nor its log.
const answeredHere = new WeakSet<IncomingMessage>();

/** Whether the listener answered this request (the app then neither answers nor logs it). */
export function wasAnsweredByClientError(req: IncomingMessage | undefined): boolean {
  return req !== undefined && answeredHere.has(req);
}

/**
 * A node:http server 'clientError' listener. Where responses are under way on
 * the connection, they are let finish and the connection is closed after them,
 * the bad request unanswered: a 400 among them would be read as one of their
 * answers. A request answered before its body was in (whose body then stalls
 * past its deadline, say) gets no second answer: the connection closes.
 * Otherwise the envelope, then close. Each 400 is logged like a request: with
 * the method and path of the request whose body the app was reading, if any
 * (its one log line), else with none to tell.
 */
export function clientErrorListener(connection: ConnectionAnswers, log?: RequestLog): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (connection.answered(socket)) return void socket.destroy(err);
    const reachable = err.code !== 'ECONNRESET' && socket.writable;
    const owed = reachable ? connection.answering(socket) : [];
    if (owed.length > 0) {
      let left = owed.length;
      for (const res of owed) res.once('close', () => --left === 0 && socket.destroy(err));
      return;
    }
    if (reachable) {
      const started = performance.now();
      const req = connection.reading(socket);
      if (req) answeredHere.add(req);
      const e = refusal(err.code);
      const { requestId, headers, body } = envelopeOf(e);
      socket.write(rawAnswer(e.status, headers, body));
      log?.({ requestId, method: req?.method ?? '-', path: req?.url?.split('?', 1)[0] ?? '-', status: e.status, started, keyId: undefined });
    }
    socket.destroy(err);
  };
}

/** An answer written to the socket itself, where Node's response objects are not there; the connection closes after it. */
function rawAnswer(status: number, headers: Record<string, string>, body: string): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers).map(([n, v]) => `${n}: ${v}\r\n`).join('')}Connection: close\r\n\r\n${body}`;
}

function envelopeOf(e: ApiError): { requestId: string; headers: Record<string, string>; body: string } {
  const requestId = randomUUID();
  const body = errorBody(e, requestId);
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Request-Id': requestId,
    'Access-Control-Allow-Origin': '*',
    'Content-Length': String(Buffer.byteLength(body)),
  };
  return { requestId, headers, body };
}

/**
 * Requests Node's parser lets through that srvx cannot make a URL of, answered
 * here in the envelope, as the parser's refusals are, before srvx sees them:
 * a request-target that is neither a path from `/`, `*`, nor an absolute
 * http(s) URL (`*?`, `ftp://x/`: srvx sent a bare 400), and a Host no URL can
 * hold (`example.com:99999`: with a path the parser rewrites, srvx threw, a
 * bare 500; RFC 9112 3.2 refuses an invalid Host with 400). Returns whether it did.
 */
export function refuseUnservableRequest(req: IncomingMessage, res: ServerResponse, log?: RequestLog): boolean {
  const target = req.url ?? '/';
  const message =
    !target.startsWith('/') && target !== '*' && !isHttpUrl(target) ? 'the request target must be a path from / or an absolute http(s) URL' : invalidHostMessage(req.headers.host);
  if (message === null) return false;
  const { status, headers, body } = refusalLogged(message, req.method ?? '-', log);
  res.writeHead(status, headers).end(body);
  return true;
}

/**
 * CONNECT (a proxy's method, its target a host:port): Node hands such a
 * request to 'connect' listeners only, and with none closed the connection
 * unanswered. Answered here as any other target that is not a path.
 */
export function connectListener(log?: RequestLog): (req: IncomingMessage, socket: Duplex) => void {
  return (req, socket) => {
    const { status, headers, body } = refusalLogged('the request target must be a path from / or an absolute http(s) URL (Till is not a proxy)', req.method ?? 'CONNECT', log);
    socket.on('error', () => socket.destroy());
    socket.end(rawAnswer(status, headers, body));
  };
}

/**
 * The same Host check for a WebSocket upgrade (crossws builds its request
 * without one): the 400 answer to send instead of upgrading, or null.
 */
export function refuseUpgradeWithInvalidHost(req: Request, log?: RequestLog): Response | null {
  const message = invalidHostMessage(req.headers.get('host') ?? undefined);
  if (message === null) return null;
  const { status, headers, body } = refusalLogged(message, req.method, log);
  return new Response(body, { status, headers });
}

/** The 400 envelope refusing a request before the app saw it, logged as a request (its path not told). */
function refusalLogged(message: string, method: string, log?: RequestLog): { status: number; headers: Record<string, string>; body: string } {
  const started = performance.now();
  const e = new ApiError('validation_error', message);
  const { requestId, headers, body } = envelopeOf(e);
  log?.({ requestId, method, path: '-', status: e.status, started, keyId: undefined });
  return { status: e.status, headers, body };
}

/** Why a Host header no URL can hold is refused (RFC 9112 3.2), or null; a missing one is the app's to refuse. */
function invalidHostMessage(host: string | undefined): string | null {
  return host !== undefined && host !== '' && !URL.canParse(`http://${host}/`) ? 'the Host header is not a valid host[:port]' : null;
}

/** srvx's own test of an absolute-form target. */
function isHttpUrl(target: string): boolean {
  const url = URL.parse(target);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '';
}
