// bitcoind's HTTP JSON-RPC front (httprpc.cpp, rpc/request.cpp): POST only,
// HTTP Basic auth with a 250 ms penalty for wrong credentials, JSON-RPC 1.0
// replies with both result and error (HTTP 500/404/400 on error), JSON-RPC
// 2.0 replies (always HTTP 200), batches, bodies ending in a newline.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RPC_INVALID_REQUEST, RPC_METHOD_NOT_FOUND, RPC_MISC_ERROR, RPC_PARSE_ERROR, RpcError } from './rpc-error.ts';

export type RpcDispatch = (method: string, params: unknown[] | Record<string, unknown>) => unknown;
export type RpcAuthorize = (user: string, password: string) => boolean;

const WRONG_AUTH_DELAY_MS = 250;
// libevent's body limit in bitcoind (MAX_SIZE).
const MAX_BODY_BYTES = 0x02000000;

interface ParsedRequest {
  /** undefined when the request had no "id" (then the reply has none either). */
  id: unknown;
  v2: boolean;
  method: string;
  params: unknown[] | Record<string, unknown>;
}

type Reply = Record<string, unknown>;

export class RpcServer {
  readonly #dispatch: RpcDispatch;
  readonly #authorize: RpcAuthorize;
  #server: Server | null = null;
  #port = 0;

  constructor(dispatch: RpcDispatch, authorize: RpcAuthorize) {
    this.#dispatch = dispatch;
    this.#authorize = authorize;
  }

  get port(): number {
    return this.#port;
  }

  get running(): boolean {
    return this.#server !== null;
  }

  /** Listens on 127.0.0.1: a random port the first time, the same port afterwards. */
  async start(): Promise<void> {
    if (this.#server) return;
    // A client that hangs up mid-request must not take the test process down.
    const server = createServer((req, res) => void this.#handle(req, res).catch(() => res.destroy()));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stops listening and drops open connections, so clients see connection refused. */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path !== '/' && !path.startsWith('/wallet/')) return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405).end('JSONRPC server handles only POST requests');
    const auth = req.headers.authorization;
    if (!auth) return void res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="jsonrpc"' }).end();
    if (!this.#checkAuth(auth)) {
      // bitcoind sleeps before refusing, to slow down password guessing.
      await new Promise((resolve) => setTimeout(resolve, WRONG_AUTH_DELAY_MS));
      return void res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="jsonrpc"' }).end();
    }
    const body = await readBody(req);
    if (body === null) return void res.writeHead(413).end();

    let request: unknown;
    try {
      request = JSON.parse(body);
    } catch {
      return send(res, 500, errorReply(new RpcError(RPC_PARSE_ERROR, 'Parse error'), null, false));
    }
    if (Array.isArray(request)) {
      const replies = request.map((item) => this.#execute(item)).filter((r): r is Reply => r !== null);
      // An all-notification batch gets no body, an empty batch gets [].
      if (replies.length === 0 && request.length > 0) return void res.writeHead(204).end();
      return send(res, 200, replies);
    }
    if (typeof request !== 'object' || request === null) {
      return send(res, 500, errorReply(new RpcError(RPC_PARSE_ERROR, 'Top-level object parse error'), null, false));
    }
    let parsed: ParsedRequest;
    try {
      parsed = parseRequest(request);
    } catch (err) {
      const { id, v2 } = peekIdAndVersion(request);
      const error = asRpcError(err);
      return send(res, httpStatusFor(error.code), errorReply(error, id, v2));
    }
    const reply = this.#run(parsed);
    if (parsed.v2 && parsed.id === undefined) return void res.writeHead(204).end();
    const error = reply.error as { code: number } | null | undefined;
    // JSON-RPC 1.0 errors travel with an HTTP error status; 2.0 always answers 200.
    return send(res, !parsed.v2 && error ? httpStatusFor(error.code) : 200, reply);
  }

  /** One batch member: parse and run, every error inside the reply; null for a 2.0 notification. */
  #execute(item: unknown): Reply | null {
    let parsed: ParsedRequest;
    try {
      parsed = parseRequest(item);
    } catch (err) {
      const { id, v2 } = peekIdAndVersion(item);
      return errorReply(asRpcError(err), id, v2);
    }
    const reply = this.#run(parsed);
    return parsed.v2 && parsed.id === undefined ? null : reply;
  }

  #run(req: ParsedRequest): Reply {
    try {
      const result = this.#dispatch(req.method, req.params);
      const reply: Reply = {};
      if (req.v2) reply.jsonrpc = '2.0';
      reply.result = result ?? null;
      if (!req.v2) reply.error = null;
      if (req.id !== undefined) reply.id = req.id;
      return reply;
    } catch (err) {
      return errorReply(asRpcError(err), req.id, req.v2);
    }
  }

  #checkAuth(header: string): boolean {
    if (!header.startsWith('Basic ')) return false;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 && this.#authorize(decoded.slice(0, colon), decoded.slice(colon + 1));
  }
}

function parseRequest(value: unknown): ParsedRequest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RpcError(RPC_INVALID_REQUEST, 'Invalid Request object');
  const obj = value as Record<string, unknown>;
  const { id, v2 } = peekIdAndVersion(obj);
  const version = obj.jsonrpc;
  if (version !== undefined && version !== null) {
    if (typeof version !== 'string') throw new RpcError(RPC_INVALID_REQUEST, 'jsonrpc field must be a string');
    if (version !== '1.0' && version !== '2.0') throw new RpcError(RPC_INVALID_REQUEST, 'JSON-RPC version not supported');
  }
  if (obj.method === undefined || obj.method === null) throw new RpcError(RPC_INVALID_REQUEST, 'Missing method');
  if (typeof obj.method !== 'string') throw new RpcError(RPC_INVALID_REQUEST, 'Method must be a string');
  const params = obj.params ?? [];
  if (typeof params !== 'object' || params === null) throw new RpcError(RPC_INVALID_REQUEST, 'Params must be an array or object');
  return { id, v2, method: obj.method, params: params as unknown[] | Record<string, unknown> };
}

function peekIdAndVersion(value: unknown): { id: unknown; v2: boolean } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { id: null, v2: false };
  const obj = value as Record<string, unknown>;
  return { id: 'id' in obj ? obj.id : undefined, v2: obj.jsonrpc === '2.0' };
}

function asRpcError(err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  // Core turns any other exception in a handler into RPC_MISC_ERROR with its text.
  return new RpcError(RPC_MISC_ERROR, err instanceof Error ? err.message : String(err));
}

function errorReply(error: RpcError, id: unknown, v2: boolean): Reply {
  const reply: Reply = {};
  if (v2) reply.jsonrpc = '2.0';
  if (!v2) reply.result = null;
  reply.error = { code: error.code, message: error.message };
  if (id !== undefined) reply.id = id;
  return reply;
}

function httpStatusFor(code: number): number {
  if (code === RPC_INVALID_REQUEST) return 400;
  if (code === RPC_METHOD_NOT_FOUND) return 404;
  return 500;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
